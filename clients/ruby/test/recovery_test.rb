# frozen_string_literal: true

# What a user sees when the network or the server gets in the way, against the live server named by
# FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY: downloads cut mid-body, a retry that meets its own first attempt
# still running, a resumable upload held by a PATCH that went quiet, and answers that are not the API's (a proxy's
# HTML page, a Retry-After longer than the client waits).
require 'minitest/autorun'
require 'digest'
require 'json'
require 'securerandom'
require 'socket'
require 'stringio'
require 'file_storage'
require_relative 'live_server'
require_relative 'test_proxy'

# The shared set-up (client, scratch folders, random files) and what only these tests need.
module Recovery
  include LiveServer

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # A socket to the server with this request's head already sent.
  def raw_request(method, path, headers)
    server = URI(base_url)
    socket = TCPSocket.new(server.host, server.port)
    lines = ["#{method} #{path} HTTP/1.1", "Host: #{server.host}:#{server.port}", "Authorization: Bearer #{api_key}",
             'Connection: close'] + headers.map { |name, value| "#{name}: #{value}" }
    socket.write("#{lines.join("\r\n")}\r\n\r\n")
    socket
  end
end

class DownloadRecoveryTest < Minitest::Test
  include Recovery

  def download_requests(proxy) = proxy.requests_matching(%r{\AGET /v1/files/[^ ]+/download\?})

  def test_a_download_reset_mid_body_resumes_where_it_stopped_and_the_file_is_whole
    path, md5 = random_file('big.bin', 3 * Recovery::MIB)
    file = client.files.upload(path, folder_id: @folder['id'])
    proxy = TestProxy.new(base_url).cut(after: Recovery::MIB, matching: %r{/download\?}, how: :reset)
    target = File.join(@dir, 'copy.bin')
    FileStorage::Client.new(api_key: api_key, base_url: proxy.url).files.download(file['id'], target)

    assert_equal [1, 3 * Recovery::MIB, md5], [proxy.cuts, File.size(target), Digest::MD5.file(target).hexdigest]
    downloads = download_requests(proxy)
    assert_equal 2, downloads.size
    # The second request asked only for the rest, of the same version of the file.
    assert_match(/^range: bytes=[1-9]\d*-\r$/i, downloads.last)
    assert_match(/^if-range: "#{file['md5_hash']}"\r$/i, downloads.last)
  ensure
    proxy&.close
  end

  def test_a_download_to_a_block_reset_mid_body_gives_each_byte_once
    path, md5 = random_file('streamed.bin', 2 * Recovery::MIB)
    file = client.files.upload(path, folder_id: @folder['id'])
    proxy = TestProxy.new(base_url).cut(after: 300 * Recovery::KIB, matching: %r{/download\?}, how: :reset)
    digest = Digest::MD5.new
    received = 0
    FileStorage::Client.new(api_key: api_key, base_url: proxy.url).files.download(file['id']) do |chunk|
      digest << chunk
      received += chunk.bytesize
    end
    assert_equal [1, 2 * Recovery::MIB, md5], [proxy.cuts, received, digest.hexdigest]
  ensure
    proxy&.close
  end

  def test_a_file_that_changed_while_it_downloaded_is_never_stitched_from_two_versions
    path, = random_file('changing.bin', 1 * Recovery::MIB)
    file = client.files.upload(path, folder_id: @folder['id'])
    replace = lambda do
      client.files.upload(StringIO.new(Random.bytes(Recovery::MIB)), name: 'changing.bin', folder_id: @folder['id'],
                                                                      overwrite: true)
    end
    proxy = TestProxy.new(base_url).cut(after: 300 * Recovery::KIB, matching: %r{/download\?}, how: :reset,
                                        on_cut: replace)
    chunks = StringIO.new(+''.b)
    error = assert_raises(FileStorage::ConnectionError) do
      FileStorage::Client.new(api_key: api_key, base_url: proxy.url).files.download(file['id'], chunks)
    end
    assert_match(/changed/, error.message)
    assert_operator chunks.string.bytesize, :<, Recovery::MIB
    assert_equal File.binread(path, chunks.string.bytesize), chunks.string, 'only bytes of the first version were written'
  ensure
    proxy&.close
  end

  def test_a_download_the_peer_ended_early_is_resumed_and_the_file_is_whole
    path, md5 = random_file('early.bin', 2 * Recovery::MIB)
    file = client.files.upload(path, folder_id: @folder['id'])
    proxy = TestProxy.new(base_url).cut(after: 700 * Recovery::KIB, matching: %r{/download\?})
    target = File.join(@dir, 'early-copy.bin')
    FileStorage::Client.new(api_key: api_key, base_url: proxy.url).files.download(file['id'], target)

    assert_equal [1, 2 * Recovery::MIB, md5], [proxy.cuts, File.size(target), Digest::MD5.file(target).hexdigest]
    assert_match(/^range: bytes=[1-9]\d*-\r$/i, download_requests(proxy).last)
  ensure
    proxy&.close
  end

  def test_a_download_the_peer_ended_early_without_retries_raises_and_leaves_no_partial_file
    path, = random_file('cut.bin', 1 * Recovery::MIB)
    file = client.files.upload(path, folder_id: @folder['id'])
    proxy = TestProxy.new(base_url).cut(after: 200 * Recovery::KIB, matching: %r{/download\?})
    target = File.join(@dir, 'cut-copy.bin')
    error = assert_raises(FileStorage::ConnectionError) do
      FileStorage::Client.new(api_key: api_key, base_url: proxy.url, max_retries: 0).files.download(file['id'], target)
    end
    assert_equal 'connection_error', error.code
    assert_match(/ended after \d+ of #{Recovery::MIB} bytes/, error.message)
    # The download link's signature opens the file for an hour: an error message ends up in logs.
    assert_match(%r{GET /v1/files/#{file['id']}/download\?<redacted> failed}, error.message)
    refute_match(/signature=/, error.message)
    refute File.exist?(target), 'a partial file was left behind'
  ensure
    proxy&.close
  end
end

class IdempotentRetryTest < Minitest::Test
  include Recovery

  # The first attempt of an upload is still sending its body when its retry, with the same Idempotency-Key, arrives
  # (as after a timeout on a slow link): the retry waits for it and answers the file it stored, not a second file.
  def test_a_retry_that_meets_its_first_attempt_still_running_waits_for_its_answer
    path, md5 = random_file('report.bin', 256 * Recovery::KIB)
    key = SecureRandom.uuid
    body = FileStorage::MultipartBody.build(FileStorage::UploadSource.open(path), 'report.bin',
                                            { 'folder_id' => @folder['id'] })
    stream = body.open
    bytes = +''.b
    while (part = stream.read(65_536))
      bytes << part
    end
    stream.close
    first = raw_request('POST', '/v1/files/upload', 'Idempotency-Key' => key, 'Content-Type' => body.content_type,
                                                    'Content-Length' => bytes.bytesize)
    first.write(bytes.byteslice(0, 4096))
    first_answer = Thread.new do
      sleep(3.5)
      first.write(bytes.byteslice(4096..))
      first.read
    ensure
      first.close
    end
    sleep(0.5) # the first attempt has taken the key

    started = now
    uploaded = client.files.upload(path, folder_id: @folder['id'], idempotency_key: key)
    waited = now - started

    stored = JSON.parse(first_answer.value.split("\r\n\r\n", 2).last)['data']
    assert_equal [stored['id'], 'report.bin', md5], uploaded.values_at('id', 'name', 'md5_hash')
    assert_operator waited, :>=, 2.5, 'answered before the first attempt had finished'
    assert_equal ['report.bin'], client.files.each(folder_id: @folder['id']).map { |item| item['name'] }
  ensure
    first_answer&.join
  end

  def test_a_plain_conflict_is_raised_at_once
    envelope = '{"success":false,"error":{"code":"conflict","message":"Delivery is still being attempted."}}'
    proxy = TestProxy.new(base_url).answer(/redeliver/, with: TestProxy.http_answer(
      '409 Conflict', { 'Content-Type' => 'application/json', 'Retry-After' => 1 }, envelope
    ))
    stubbed = FileStorage::Client.new(api_key: 'key', base_url: proxy.url)
    error = assert_raises(FileStorage::ConflictError) { stubbed.webhooks.redeliver('wh_1', 'del_1') }
    assert_equal ['conflict', 409, 1], [error.code, error.status, proxy.requests.size]
  ensure
    proxy&.close
  end
end

class LockedUploadTest < Minitest::Test
  include Recovery

  # A PATCH that stopped sending half-way holds the upload (HEAD answers 423) until it ends; resuming waits for it
  # and goes on from the bytes that PATCH stored. Waiting for a lock is no retry: max_retries: 0 waits too.
  def test_a_resumable_upload_held_by_a_quiet_patch_waits_for_the_lock_and_completes_even_without_retries
    size = 2 * Recovery::MIB
    path, md5 = random_file('locked.bin', size)
    uploader = client(resumable_chunk: 512 * Recovery::KIB, max_retries: 0)
    location = uploader.files.start_resumable_upload(path, folder_id: @folder['id'])
    quiet = raw_request('PATCH', location, 'Tus-Resumable' => '1.0.0', 'Upload-Offset' => 0,
                                           'Content-Type' => 'application/offset+octet-stream',
                                           'Content-Length' => 512 * Recovery::KIB)
    quiet.write(File.binread(path, 100 * Recovery::KIB))
    ender = Thread.new do
      sleep(7)
      quiet.close
    end
    sleep(0.5) # the quiet PATCH holds the upload

    started = now
    file = uploader.files.resume_upload(location, path)
    assert_operator now - started, :>=, 5, 'resumed before the quiet PATCH ended'
    assert_equal ['locked.bin', size, md5], file.values_at('name', 'size', 'md5_hash')
  ensure
    ender&.join
  end

  # The lock is taken between two PATCHes of the upload: the next PATCH, then HEAD, answer 423 until it is free.
  def test_a_resumable_upload_locked_between_two_patches_waits_and_completes_even_without_retries
    size = 2 * Recovery::MIB
    chunk = 512 * Recovery::KIB
    path, md5 = random_file('relocked.bin', size)
    uploader = client(resumable_chunk: chunk, max_retries: 0)
    location = uploader.files.start_resumable_upload(path, folder_id: @folder['id'])
    quiet = nil
    ender = nil
    take_the_lock = lambda do |sent, _total|
      next if quiet

      quiet = raw_request('PATCH', location, 'Tus-Resumable' => '1.0.0', 'Upload-Offset' => sent,
                                             'Content-Type' => 'application/offset+octet-stream',
                                             'Content-Length' => chunk)
      quiet.write(File.binread(path, 64 * Recovery::KIB, sent))
      ender = Thread.new do
        sleep(7)
        quiet.close
      end
      sleep(0.5) # the quiet PATCH holds the upload
    end
    started = now
    file = uploader.files.resume_upload(location, path, on_progress: take_the_lock)
    assert_operator now - started, :>=, 6, 'went on before the quiet PATCH ended'
    assert_equal ['relocked.bin', size, md5], file.values_at('name', 'size', 'md5_hash')
  ensure
    ender&.join
  end
end

class UnexpectedAnswerTest < Minitest::Test
  include Recovery

  def setup = nil
  def teardown = nil

  # A captive portal or a proxy's error page answers in the server's stead, with a 200 and HTML.
  def test_an_answer_that_is_not_json_raises_the_librarys_error_quoting_it
    page = "<html><head><title>Hotel Wi-Fi</title></head>\n<body>Accept the terms to go on.</body></html>"
    proxy = TestProxy.new(base_url).answer(%r{\AGET /v1/user/info}, with: TestProxy.http_answer(
      '200 OK', { 'Content-Type' => 'text/html' }, page
    ))
    error = assert_raises(FileStorage::InvalidResponseError) do
      FileStorage::Client.new(api_key: api_key, base_url: proxy.url).user.info
    end
    assert_equal ['invalid_response', 200], [error.code, error.status]
    assert_includes error.message, 'GET /v1/user/info'
    assert_includes error.message, 'text/html'
    assert_includes error.message, '<html><head><title>Hotel Wi-Fi</title></head> <body>Accept'
  ensure
    proxy&.close
  end

  # Retrying before the time the server asked for can only be refused again: the caller gets the error at once.
  def test_a_retry_after_longer_than_the_client_waits_is_raised_at_once_with_it
    [['429 Too Many Requests', FileStorage::RateLimitError, 'rate_limit_exceeded'],
     ['503 Service Unavailable', FileStorage::ServiceUnavailableError, 'service_unavailable']].each do |status, klass, code|
      envelope = JSON.generate(success: false, error: { code: code, message: 'Come back in an hour.' })
      proxy = TestProxy.new(base_url).answer(%r{\AGET /v1/user/info}, with: TestProxy.http_answer(
        status, { 'Content-Type' => 'application/json', 'Retry-After' => 3600 }, envelope
      ))
      started = now
      error = assert_raises(klass) { FileStorage::Client.new(api_key: api_key, base_url: proxy.url, max_retries: 2).user.info }
      assert_equal [3600.0, 1], [error.retry_after, proxy.requests.size], status
      # Waiting would take the hour asked for; one request (above) shows it was not retried.
      assert_operator now - started, :<, 60, "#{status} waited before raising"
    ensure
      proxy&.close
    end
  end
end
