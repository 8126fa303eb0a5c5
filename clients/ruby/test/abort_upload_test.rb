# frozen_string_literal: true

# Giving up a resumable upload, against the live server named by FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY.
require 'minitest/autorun'
require 'fileutils'
require 'tmpdir'
require 'file_storage'

class AbortUploadTest < Minitest::Test
  def client = FileStorage::Client.new(api_key: ENV.fetch('FILE_STORAGE_API_KEY'), base_url: ENV.fetch('FILE_STORAGE_BASE_URL'))

  def setup
    @dir = Dir.mktmpdir('fss-ruby-abort-')
    @path = File.join(@dir, 'abandoned.bin')
    File.binwrite(@path, Random.bytes(3 * FileStorage::MIB))
  end

  def teardown = FileUtils.remove_entry(@dir)

  def available = client.user.info.dig('storage', 'available')

  def test_an_aborted_upload_gives_its_reserved_quota_back_and_cannot_be_resumed
    before = available
    location = client.files.start_resumable_upload(@path)
    assert_equal before - File.size(@path), available, 'the upload reserves its size'

    assert_nil client.files.abort_upload(location)

    assert_equal before, available
    assert_raises(FileStorage::NotFoundError) { client.files.resume_upload(location, @path) }
  end
end
