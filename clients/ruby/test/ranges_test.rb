# frozen_string_literal: true

# Part of a file or of a shared file (HTTP Range), against the live server named by FILE_STORAGE_BASE_URL and
# FILE_STORAGE_API_KEY.
require 'minitest/autorun'
require 'stringio'
require 'file_storage'
require_relative 'live_server'
require_relative 'test_proxy'

class RangesTest < Minitest::Test
  include LiveServer

  def setup
    super
    @file = client.files.upload(StringIO.new('0123456789'), name: 'digits.txt', folder_id: @folder['id'])
    @share = client.shares.create(file_id: @file['id'], password: 'open sesame')
  end

  def part(range, &download)
    sink = StringIO.new(+''.b)
    download.call(range, sink)
    sink.string
  end

  def test_a_range_downloads_those_bytes_of_a_file_or_a_shared_file
    # As a Ruby Range indexes an Array: inclusive or exclusive end, endless to the end, a negative begin from the end.
    { 2..5 => '2345', 2...6 => '2345', 7.. => '789', -3.. => '789', ..2 => '012' }.each do |range, expected|
      assert_equal expected, part(range) { |r, sink| client.files.download(@file['id'], sink, range: r) }, range.inspect
      assert_equal expected, part(range) { |r, sink| client.shares.download(@share['url'], sink, password: 'open sesame', range: r) },
                   "shared #{range.inspect}"
    end
    target = File.join(@dir, 'part.txt')
    client.files.download(@file['id'], target, range: 4..6)
    assert_equal '456', File.binread(target)
    chunks = []
    client.files.download(@file['id'], range: 8..) { |chunk| chunks << chunk }
    assert_equal '89', chunks.join
  end

  def test_a_range_past_the_end_raises_invalid_request_error_and_one_http_cannot_say_argument_error
    error = assert_raises(FileStorage::InvalidRequestError) { client.files.download(@file['id'], StringIO.new, range: 20..) }
    assert_equal [416, { 'size' => 10 }], [error.status, error.details]
    [2..-1, -3..9, 'bytes=0-1'].each do |range|
      assert_raises(ArgumentError, range.inspect) { client.files.download(@file['id'], StringIO.new, range: range) }
    end
  end

  def test_a_range_cut_mid_body_is_resumed_from_the_byte_it_stopped_at
    path, = random_file('big.bin', 3 * MIB)
    file = client.files.upload(path, folder_id: @folder['id'])
    proxy = TestProxy.new(base_url).cut(after: 300 * KIB, matching: %r{/download\?}, how: :reset)
    sink = StringIO.new(+''.b)
    FileStorage::Client.new(api_key: api_key, base_url: proxy.url).files.download(file['id'], sink, range: MIB...(2 * MIB))

    assert_equal [1, File.binread(path, MIB, MIB)], [proxy.cuts, sink.string]
    resumed = proxy.requests_matching(%r{/download\?}).last
    delivered = Integer(resumed[/^range: bytes=(\d+)-#{(2 * MIB) - 1}\r$/i, 1]) - MIB
    assert_operator delivered, :>, 0, 'asked for the rest of the range'
    assert_match(/^if-range: "#{file['md5_hash']}"\r$/i, resumed)
  ensure
    proxy&.close
  end

  # A proxy or cache that does not do ranges answers 200 with the whole file: a download resumed from an offset (an
  # append to the bytes already on disk) must still get only the bytes after it.
  def test_a_range_through_a_proxy_that_ignores_range_still_gives_only_those_bytes
    proxy = TestProxy.new(base_url).ignore_ranges(matching: %r{/download})
    through = FileStorage::Client.new(api_key: api_key, base_url: proxy.url)
    { 2..5 => '2345', 7.. => '789', -3.. => '789', 4..50 => '456789' }.each do |range, expected|
      assert_equal expected, part(range) { |r, sink| through.files.download(@file['id'], sink, range: r) }, range.inspect
      assert_equal expected, part(range) { |r, sink| through.shares.download(@share['url'], sink, password: 'open sesame', range: r) },
                   "shared #{range.inspect}"
    end
    target = File.join(@dir, 'resumed.txt')
    File.binwrite(target, '0123')
    File.open(target, 'ab') { |file| through.files.download(@file['id'], file, range: File.size(target)..) }
    assert_equal '0123456789', File.binread(target)
    assert_operator proxy.requests_matching(%r{/download}).size, :>=, 9, 'the downloads went through the proxy'
  ensure
    proxy&.close
  end

  def test_a_download_cut_mid_body_and_continued_through_a_proxy_that_ignores_range_still_gives_each_byte_once
    path, = random_file('big.bin', 3 * MIB)
    file = client.files.upload(path, folder_id: @folder['id'])
    proxy = TestProxy.new(base_url).ignore_ranges(matching: %r{/download\?})
    proxy.cut(after: 300 * KIB, matching: %r{/download\?}, how: :reset)
    through = FileStorage::Client.new(api_key: api_key, base_url: proxy.url)
    whole = StringIO.new(+''.b)
    through.files.download(file['id'], whole)
    part = StringIO.new(+''.b)
    proxy.cut(after: 300 * KIB, matching: %r{/download\?}, how: :reset)
    through.files.download(file['id'], part, range: MIB...(2 * MIB))

    assert_equal [2, File.binread(path), File.binread(path, MIB, MIB)], [proxy.cuts, whole.string, part.string]
  ensure
    proxy&.close
  end
end
