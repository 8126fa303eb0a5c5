# frozen_string_literal: true

# Resuming a resumable upload from another process, against the live server named by FILE_STORAGE_BASE_URL and
# FILE_STORAGE_API_KEY.
require 'minitest/autorun'
require 'timeout'
require 'file_storage'
require_relative 'live_server'

class ResumeUploadTest < Minitest::Test
  include LiveServer

  def test_resuming_with_a_source_of_another_size_raises_argument_error_before_sending_a_byte
    path, md5 = random_file('announced.bin', 300 * KIB)
    location = client.files.start_resumable_upload(path, folder_id: @folder['id'])
    [100 * KIB, 500 * KIB].each do |size|
      other, = random_file("other-#{size}.bin", size)
      # A guard against a hang only (it looped on empty PATCHes): the answer comes from one HEAD.
      error = Timeout.timeout(120) { assert_raises(ArgumentError) { client.files.resume_upload(location, other) } }
      assert_match(/#{300 * KIB} bytes.*#{size}/, error.message)
    end
    assert_equal md5, client.files.resume_upload(location, path)['md5_hash'], 'resumed with its own file, nothing else in it'
  end
end
