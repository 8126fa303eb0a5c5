# frozen_string_literal: true

# An upload sent again with its Idempotency-Key, as a restarted process sends it, against the live server named by
# FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY.
require 'minitest/autorun'
require 'fileutils'
require 'securerandom'
require 'tmpdir'
require 'file_storage'

class IdempotentUploadTest < Minitest::Test
  def client = FileStorage::Client.new(api_key: ENV.fetch('FILE_STORAGE_API_KEY'), base_url: ENV.fetch('FILE_STORAGE_BASE_URL'))

  def setup
    @dir = Dir.mktmpdir('fss-ruby-idempotent-')
    @path = File.join(@dir, 'once.bin')
    File.binwrite(@path, Random.bytes(300 * 1024))
  end

  def teardown = FileUtils.remove_entry(@dir)

  def test_an_upload_sent_again_with_its_key_stores_the_file_once_in_one_request_or_resumable
    [2**62, 1].each do |threshold|
      folder = client.folders.create(name: "idempotent upload #{SecureRandom.hex(4)}")
      options = { folder_id: folder['id'], idempotency_key: SecureRandom.uuid, resumable_threshold: threshold }
      first = client.files.upload(@path, **options)
      again = client.files.upload(@path, **options)
      assert_equal first['id'], again['id'], "resumable_threshold #{threshold}"
      assert_equal ['once.bin'], client.files.list(folder_id: folder['id']).map { |file| file['name'] }
    end
  end
end
