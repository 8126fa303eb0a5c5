# frozen_string_literal: true

# An upload sent again with its Idempotency-Key, as a restarted process sends it, against the live server named by
# FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY.
require 'minitest/autorun'
require 'securerandom'
require 'file_storage'
require_relative 'live_server'

class IdempotentUploadTest < Minitest::Test
  include LiveServer

  def test_an_upload_sent_again_with_its_key_stores_the_file_once_in_one_request_or_resumable
    path, = random_file('once.bin', 300 * LiveServer::KIB)
    [2**62, 1].each do |threshold|
      # A folder of its own per threshold: the name once.bin is free in each.
      folder = client.folders.create(name: "threshold #{threshold}", parent_id: @folder['id'])
      options = { folder_id: folder['id'], idempotency_key: SecureRandom.uuid, resumable_threshold: threshold }
      first = client.files.upload(path, **options)
      again = client.files.upload(path, **options)
      assert_equal first['id'], again['id'], "resumable_threshold #{threshold}"
      assert_equal ['once.bin'], client.files.list(folder_id: folder['id']).map { |file| file['name'] }
    end
  end
end
