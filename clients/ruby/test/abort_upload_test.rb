# frozen_string_literal: true

# Giving up a resumable upload, against the live server named by FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY.
require 'minitest/autorun'
require 'file_storage'
require_relative 'live_server'

class AbortUploadTest < Minitest::Test
  include LiveServer

  def available = client.user.info.dig('storage', 'available')

  def test_an_aborted_upload_gives_its_reserved_quota_back_and_cannot_be_resumed
    path, = random_file('abandoned.bin', 3 * LiveServer::MIB)
    before = available
    location = client.files.start_resumable_upload(path, folder_id: @folder['id'])
    assert_equal before - File.size(path), available, 'the upload reserves its size'

    assert_nil client.files.abort_upload(location)

    assert_equal before, available
    assert_raises(FileStorage::NotFoundError) { client.files.resume_upload(location, path) }
  end
end
