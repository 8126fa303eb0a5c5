# frozen_string_literal: true

# Thumbnails, against the live server named by FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY: an image's WebP once
# the server has made it, and NotFoundError for a file that has none.
require 'minitest/autorun'
require 'fileutils'
require 'stringio'
require 'tmpdir'
require 'zlib'
require 'file_storage'

class ThumbnailTest < Minitest::Test
  def client = FileStorage::Client.new(api_key: ENV.fetch('FILE_STORAGE_API_KEY'), base_url: ENV.fetch('FILE_STORAGE_BASE_URL'))

  # A small real PNG of one colour, made with the standard library.
  def png_image(width = 64, height = 48)
    pixels = ("\x00".b + ([200, 40, 90].pack('C*') * width)) * height
    chunk = ->(kind, data) { [data.bytesize].pack('N') + kind + data + [Zlib.crc32(kind + data)].pack('N') }
    "\x89PNG\r\n\x1a\n".b + chunk.call('IHDR'.b, [width, height, 8, 2, 0, 0, 0].pack('NNCCCCC')) +
      chunk.call('IDAT'.b, Zlib::Deflate.deflate(pixels)) + chunk.call('IEND'.b, ''.b)
  end

  def setup
    @dir = Dir.mktmpdir('fss-ruby-thumbnail-')
  end

  def teardown
    FileUtils.remove_entry(@dir)
  end

  def test_downloads_an_images_thumbnail_once_made_and_raises_not_found_for_a_file_without_one
    image = client.files.upload(StringIO.new(png_image), name: 'photo.png')
    text = client.files.upload(StringIO.new('no pixels here'), name: 'notes.txt')
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 20
    sleep 0.2 until client.files.get(image['id'])['thumbnail_url'] || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

    target = File.join(@dir, 'thumb.webp')
    client.files.thumbnail(image['id'], target)
    thumbnail = File.binread(target)
    assert_equal ['RIFF', 'WEBP'], [thumbnail[0, 4], thumbnail[8, 4]]
    chunks = +''.b
    client.files.thumbnail(image['id']) { |chunk| chunks << chunk }
    assert_equal thumbnail, chunks

    error = assert_raises(FileStorage::NotFoundError) { client.files.thumbnail(text['id'], File.join(@dir, 'none.webp')) }
    assert_equal 404, error.status
    assert_match(/no thumbnail/, error.message)
    refute File.exist?(File.join(@dir, 'none.webp'))
  end
end
