# frozen_string_literal: true

# Runs every Ruby example of README.md, in order and as written, against the live server named by
# FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY: only the origins are swapped for the test server's and a local
# receiver's, in a scratch folder holding the files the examples name.
require 'minitest/autorun'
require 'socket'
require 'time'
require 'tmpdir'
require 'file_storage'

class ReadmeTest < Minitest::Test
  README = File.read(File.expand_path('../README.md', __dir__))
  BLOCKS = README.scan(/```ruby\n(.*?)```/m).map(&:first)

  def test_finds_the_examples
    assert_operator BLOCKS.size, :>=, 9
  end

  def test_runs_every_example_as_written
    base_url = ENV.fetch('FILE_STORAGE_BASE_URL')
    receiver = TCPServer.new('127.0.0.1', 0)
    # Deliveries are answered 200 and otherwise ignored: the examples only register and test a webhook.
    Thread.new { loop { serve(receiver.accept) } }
    Dir.mktmpdir('fss-ruby-readme-') do |dir|
      Dir.chdir(dir) do
        %w[report.pdf video.mp4].each { |name| File.write(name, "the bytes of #{name}\n") }
        program = BLOCKS.join("\n")
                        .gsub('https://files.example.com', base_url)
                        .gsub('https://example.com/hooks', "http://127.0.0.1:#{receiver.addr[1]}/hooks")
        out, = capture_io { TOPLEVEL_BINDING.dup.eval(program, 'README.md') }
        assert_includes out, 'report.pdf'
        # The share example asks for a link that expires in a week, and prints when.
        expires_at = out[/^\d{4}-\d\d-\d\dT[\d:.]+Z$/]
        assert expires_at, 'the share example prints its expires_at'
        assert_in_delta Time.now + (7 * 24 * 3600), Time.iso8601(expires_at), 120
        assert_equal "the bytes of report.pdf\n", File.read('copy.pdf')
        assert_equal File.read('copy.pdf'), File.read('shared.pdf')
      end
    end
  ensure
    receiver&.close
  end

  private

  def serve(socket)
    socket.readpartial(65_536)
    socket.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
  rescue StandardError
    nil
  ensure
    socket.close
  end
end
