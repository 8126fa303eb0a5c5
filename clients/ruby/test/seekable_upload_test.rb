# frozen_string_literal: true

# Uploads from a seekable IO (a File, a StringIO), which can be read again as a path can, against the live server
# named by FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY.
require 'minitest/autorun'
require 'digest'
require 'stringio'
require 'file_storage'
require_relative 'live_server'
require_relative 'test_proxy'

class SeekableUploadTest < Minitest::Test
  include LiveServer

  def test_an_upload_from_a_string_io_cut_mid_request_is_sent_again_and_stored_once
    bytes = Random.bytes(300 * KIB)
    proxy = TestProxy.new(base_url).cut(after: 100 * KIB, of: :request, matching: %r{\APOST /v1/files/upload}, how: :reset)
    through = FileStorage::Client.new(api_key: api_key, base_url: proxy.url)
    file = through.files.upload(StringIO.new(bytes), name: 'io.bin', folder_id: @folder['id'])

    assert_equal [1, bytes.bytesize, Digest::MD5.hexdigest(bytes)], [proxy.cuts, file['size'], file['md5_hash']]
    assert_equal ['io.bin'], client.files.list(folder_id: @folder['id']).map { |one| one['name'] }
  ensure
    proxy&.close
  end

  def test_a_large_io_goes_through_the_resumable_endpoint_from_where_it_stands_and_resumes_after_a_cut
    bytes = Random.bytes(3 * MIB)
    io = StringIO.new("skipped#{bytes}")
    io.read(7)
    # The first PATCH (a chunk and its head) passes, the second is cut mid-way.
    proxy = TestProxy.new(base_url).cut(after: MIB + (MIB / 2), of: :request, matching: /\APATCH /, how: :reset)
    through = FileStorage::Client.new(api_key: api_key, base_url: proxy.url, resumable_threshold: MIB, resumable_chunk: MIB)
    file = through.files.upload(io, name: 'big-io.bin', folder_id: @folder['id'])

    assert_equal [1, bytes.bytesize, Digest::MD5.hexdigest(bytes)], [proxy.cuts, file['size'], file['md5_hash']]
    assert_operator proxy.requests_matching(/\APATCH /).size, :>, 3, 'three chunks, one of them sent again'
  ensure
    proxy&.close
  end
end
