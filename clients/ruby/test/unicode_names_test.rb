# frozen_string_literal: true

# Uploads of files with non-ASCII names, against the live server named by FILE_STORAGE_BASE_URL and
# FILE_STORAGE_API_KEY, in one request and resumable.
require 'minitest/autorun'
require 'fileutils'
require 'securerandom'
require 'tmpdir'
require 'file_storage'

class UnicodeNamesTest < Minitest::Test
  NAME = 'naïve 日本 😀.txt'

  def client = FileStorage::Client.new(api_key: ENV.fetch('FILE_STORAGE_API_KEY'), base_url: ENV.fetch('FILE_STORAGE_BASE_URL'))

  def setup
    @dir = Dir.mktmpdir('fss-ruby-unicode-')
    @folder = client.folders.create(name: "unicode names #{SecureRandom.hex(4)}")
    File.write(File.join(@dir, NAME), 'hello')
  end

  def teardown = FileUtils.remove_entry(@dir)

  # Under the C locale (a container, cron, a service without LANG) Ruby tags ARGV, ENV and Dir entries ASCII-8BIT.
  def binary_path = File.join(@dir, NAME).b

  def test_a_path_tagged_binary_keeps_its_utf8_name_in_one_request_and_resumable
    [File.join(@dir, NAME), binary_path].each do |path|
      [nil, 1].each do |threshold|
        options = { folder_id: @folder['id'], overwrite: true }
        options[:resumable_threshold] = threshold if threshold
        assert_equal NAME, client.files.upload(path, **options)['name'], "#{path.encoding}, threshold #{threshold.inspect}"
      end
    end
  end
end
