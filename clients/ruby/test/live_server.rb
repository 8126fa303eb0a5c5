# frozen_string_literal: true

require 'digest'
require 'fileutils'
require 'securerandom'
require 'tmpdir'
require 'file_storage'

# What the tests against the live server (FILE_STORAGE_BASE_URL, FILE_STORAGE_API_KEY) share: a client, a scratch
# folder on disk and one in the account for each test, and files of random bytes in it.
module LiveServer
  KIB = 1024
  MIB = FileStorage::MIB

  def base_url = ENV.fetch('FILE_STORAGE_BASE_URL')
  def api_key = ENV.fetch('FILE_STORAGE_API_KEY')
  def client(**options) = FileStorage::Client.new(api_key: api_key, base_url: base_url, **options)

  # A file of random bytes in the test's scratch folder; answers its path and MD5.
  def random_file(name, size)
    path = File.join(@dir, name)
    bytes = Random.bytes(size)
    File.binwrite(path, bytes)
    [path, Digest::MD5.hexdigest(bytes)]
  end

  def setup
    @dir = Dir.mktmpdir('fss-ruby-test-')
    @folder = client.folders.create(name: "#{self.class.name} #{name} #{SecureRandom.hex(4)}")
  end

  def teardown
    FileUtils.remove_entry(@dir) if @dir
  end
end
