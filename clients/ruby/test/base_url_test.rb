# frozen_string_literal: true

# A server mounted under a path by a reverse proxy (https://files.example.com/storage): the client is given that
# base URL and reaches every route under it. The server runs as its own process (the repository's dist/main.js,
# built with `npm run build`) with PUBLIC_BASE_URL naming the proxy's prefix, as such a deployment sets it, so the
# links it answers carry the prefix too; Redis is TEST_REDIS_URL's or REDIS_URL's, as for the server's own tests.
require 'minitest/autorun'
require 'digest'
require 'fileutils'
require 'json'
require 'net/http'
require 'securerandom'
require 'socket'
require 'stringio'
require 'tmpdir'
require 'file_storage'
require_relative 'test_proxy'

class PrefixedBaseUrlTest < Minitest::Test
  REPOSITORY = File.expand_path('../../..', __dir__)
  PREFIX = '/storage'

  def setup
    @dir = Dir.mktmpdir('fss-ruby-prefixed-')
    port = TCPServer.open('127.0.0.1', 0) { |probe| probe.addr[1] }
    @proxy = TestProxy.new("http://127.0.0.1:#{port}", prefix: PREFIX)
    @environment = {
      'NODE_ENV' => 'test', 'PORT' => port.to_s, 'PUBLIC_BASE_URL' => @proxy.url, 'LOG_LEVEL' => 'silent',
      'DATABASE_URL' => "sqlite:#{File.join(@dir, 'storage.sqlite')}", 'STORAGE_DIR' => File.join(@dir, 'blobs'),
      'REDIS_URL' => ENV['TEST_REDIS_URL'] || ENV['REDIS_URL'] || 'redis://127.0.0.1:6379',
      'REDIS_KEY_PREFIX' => "fss-ruby-prefixed-#{SecureRandom.hex(6)}",
      'URL_SIGNING_SECRET' => SecureRandom.hex(32), 'SECRETS_ENCRYPTION_KEY' => SecureRandom.hex(32)
    }
    @server = start_server("http://127.0.0.1:#{port}")
  end

  def teardown
    if @server
      Process.kill('TERM', @server)
      Process.wait(@server)
    end
    @proxy&.close
    FileUtils.remove_entry(@dir)
  end

  def test_every_route_is_reached_under_the_base_urls_path
    client = FileStorage::Client.new(api_key: api_key, base_url: "#{@proxy.url}/", resumable_threshold: 1,
                                     resumable_chunk: 64 * 1024)
    path = File.join(@dir, 'prefixed.bin')
    File.binwrite(path, Random.bytes(200_000))
    md5 = Digest::MD5.file(path).hexdigest
    folder = client.folders.create(name: 'Under a prefix')
    assert_equal folder, client.folders.get(folder['id'])
    # Resumable: the tus Location is relative (/v1/uploads/{id}), taken under the base URL.
    file = client.files.upload(path, folder_id: folder['id'])
    assert_equal [200_000, md5], file.values_at('size', 'md5_hash')
    assert file['download_url'].start_with?("#{@proxy.url}/v1/files/"), 'the server answers links under the prefix'

    copy = File.join(@dir, 'copy.bin')
    client.files.download(file['id'], copy)
    assert_equal md5, Digest::MD5.file(copy).hexdigest
    shared = StringIO.new(+''.b)
    client.shares.download(client.shares.create(file_id: file['id'])['url'], shared)
    assert_equal md5, Digest::MD5.hexdigest(shared.string)
    # An absolute upload URL is used as it is.
    location = client.files.start_resumable_upload(path, name: 'absolute.bin', folder_id: folder['id'])
    assert_equal md5, client.files.resume_upload("#{@proxy.url}#{location}", path)['md5_hash']
    assert_equal %w[absolute.bin prefixed.bin], client.files.each(folder_id: folder['id'], sort: 'name_asc').map { |f| f['name'] }

    outside = @proxy.requests.map { |head| head[/\A[^\r\n]*/] }.reject { |line| line.split(' ')[1].start_with?("#{PREFIX}/") }
    assert_empty outside, 'requests that missed the prefix'
  end

  private

  def api_key
    cli = File.join(REPOSITORY, 'dist', 'cli.js')
    output = IO.popen(@environment, ['node', cli, 'accounts', 'create', '--name', 'Prefixed', '--plan', 'pro'], &:read)
    assert $?.success?, "dist/cli.js accounts create failed: #{output}"
    JSON.parse(output).fetch('api_key')
  end

  # Starts dist/main.js and waits until /health answers; answers its pid.
  def start_server(url)
    main = File.join(REPOSITORY, 'dist', 'main.js')
    raise "#{main} is missing: run `npm run build` at the repository root first" unless File.exist?(main)

    log = File.join(@dir, 'server.log')
    pid = Process.spawn(@environment, 'node', main, %i[out err] => [log, 'w'])
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60
    loop do
      return pid if healthy?(url)
      raise "dist/main.js exited:\n#{File.read(log)}" if Process.wait(pid, Process::WNOHANG)

      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        Process.kill('KILL', pid)
        Process.wait(pid)
        raise "dist/main.js did not answer /health within 60 s:\n#{File.read(log)}"
      end
      sleep(0.2)
    end
  end

  def healthy?(url)
    Net::HTTP.get_response(URI("#{url}/health")).is_a?(Net::HTTPSuccess)
  rescue IOError, SystemCallError
    false
  end
end
