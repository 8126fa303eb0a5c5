# frozen_string_literal: true

# Unit tests of what the client computes by itself; everything that talks to a server is in conformance.rb.
require 'minitest/autorun'
require 'openssl'
require 'stringio'
require 'tempfile'
require 'file_storage'

class WebhookSignatureTest < Minitest::Test
  BODY = '{"event":"file.uploaded","timestamp":"2026-11-24T10:00:00.000Z","webhook_id":"wh_1","data":{}}'
  SECRET = 'whsec_test'
  # sha256= + hex HMAC-SHA256(SECRET, BODY), computed with `openssl dgst -sha256 -hmac whsec_test`.
  KNOWN = 'sha256=' + `printf '%s' '#{BODY}' | openssl dgst -sha256 -hmac '#{SECRET}' -r`.split.first

  def test_accepts_the_signature_of_the_exact_body_in_any_header_spelling
    assert FileStorage::Webhook.verify(BODY, { 'X-Service-Signature' => KNOWN }, SECRET)
    assert FileStorage::Webhook.verify(BODY, { 'x-service-signature' => [KNOWN] }, SECRET)
    # Rack's env spelling, for Rails and Sinatra receivers.
    assert FileStorage::Webhook.verify(BODY, { 'HTTP_X_SERVICE_SIGNATURE' => KNOWN }, SECRET)
  end

  def test_refuses_another_body_secret_or_a_malformed_header
    refute FileStorage::Webhook.verify("#{BODY} ", { 'X-Service-Signature' => KNOWN }, SECRET)
    refute FileStorage::Webhook.verify(BODY, { 'X-Service-Signature' => KNOWN }, 'another')
    refute FileStorage::Webhook.verify(BODY, { 'X-Service-Signature' => KNOWN.sub('sha256=', '') }, SECRET)
    refute FileStorage::Webhook.verify(BODY, {}, SECRET)
  end
end

class ErrorsTest < Minitest::Test
  def test_maps_the_envelope_to_a_typed_error_with_its_fields
    body = '{"error":{"code":"file_too_large","message":"Too big","details":{"file_size":10,"max_size":5,"plan":"free"}}}'
    error = FileStorage.error_from_response(413, { 'x-request-id' => 'req-1' }, body)
    assert_instance_of FileStorage::FileTooLargeError, error
    assert_equal ['file_too_large', 'Too big', 413, 'req-1', 10, 5, 'free'],
                 [error.code, error.message, error.status, error.request_id, error.file_size, error.max_size, error.plan]
  end

  def test_an_answer_without_an_envelope_gets_the_class_of_its_status
    error = FileStorage.error_from_response(502, {}, '<html>Bad gateway</html>')
    assert_instance_of FileStorage::InternalServerError, error
    assert_equal 'HTTP 502', error.message
    assert_instance_of FileStorage::RateLimitError, FileStorage.error_from_response(429, { 'retry-after' => '7' }, '')
    assert_equal 7.0, FileStorage.error_from_response(429, { 'retry-after' => '7' }, '').retry_after
  end

  def test_a_locked_upload_without_an_envelope_is_a_conflict
    # HEAD answers carry no body: a tus upload locked by another request is a bare 423.
    error = FileStorage.error_from_response(423, { 'x-request-id' => 'req-2' }, '')
    assert_instance_of FileStorage::ConflictError, error
    assert_equal ['conflict', 423, 'req-2'], [error.code, error.status, error.request_id]
  end

  def test_retry_after_in_both_forms
    assert_equal 12.0, FileStorage.parse_retry_after('12')
    assert_in_delta 30, FileStorage.parse_retry_after((Time.now + 30).httpdate), 1.5
    assert_nil FileStorage.parse_retry_after('soon')
    assert_nil FileStorage.parse_retry_after(nil)
  end
end

class UploadBodyTest < Minitest::Test
  def test_multipart_body_streams_fields_then_the_file_with_the_announced_length
    file = Tempfile.new('upload')
    file.binmode
    file.write('x' * 200_000)
    file.flush
    seen = []
    body = FileStorage::MultipartBody.build(FileStorage::UploadSource.open(file.path), 'a "b".txt',
                                            { 'folder_id' => 'fld_1', 'name' => nil }, on_progress: ->(loaded, _) { seen << loaded })
    stream = body.open
    bytes = +''.b
    while (chunk = stream.read(65_536))
      assert_operator chunk.bytesize, :<=, 65_536
      bytes << chunk
    end
    assert_equal body.size, bytes.bytesize
    assert_includes bytes, "name=\"folder_id\"\r\n\r\nfld_1\r\n"
    refute_includes bytes, 'name="name"'
    assert_includes bytes, 'filename="a %22b%22.txt"'
    assert_equal 200_000, seen.last
    assert body.replayable
  ensure
    file&.close!
  end

  def test_a_stream_that_cannot_seek_is_read_once_and_never_retried
    reader, writer = IO.pipe
    writer.write('abc')
    writer.close
    source = FileStorage::UploadSource.open(reader)
    body = FileStorage::MultipartBody.build(source, 'abc.txt', {})
    refute body.replayable
    assert_nil source.name
    assert_includes body.open.read, 'abc'
    assert_raises(ArgumentError) { body.open }
  ensure
    reader&.close
  end

  def test_a_seekable_stream_is_read_again_from_where_it_stood
    io = StringIO.new('skip-abc')
    io.read(5)
    source = FileStorage::UploadSource.open(io)
    body = FileStorage::MultipartBody.build(source, 'abc.txt', {})
    assert body.replayable
    assert_equal 3, source.size
    2.times do
      stream = body.open
      sent = +''
      while (piece = stream.read)
        sent << piece
      end
      assert_includes sent, "\r\n\r\nabc\r\n"
      refute_includes sent, 'skip'
    end
  end

  def test_tus_metadata_is_base64_per_key_and_skips_missing_values
    assert_equal "filename #{['résumé.pdf'].pack('m0')},overwrite dHJ1ZQ==",
                 FileStorage::Tus.encode_metadata('filename' => 'résumé.pdf', 'folder_id' => nil, 'overwrite' => 'true')
  end
end

class TusPatienceTest < Minitest::Test
  LOCKED = FileStorage::ConflictError.new(code: 'conflict', message: 'HTTP 423', status: 423)

  def http(max_retries) = FileStorage::HttpClient.new(api_key: 'key', base_url: 'http://127.0.0.1:9', max_retries: max_retries)

  def test_waits_with_backoff_until_its_time_is_spent_then_raises_the_last_error
    patience = FileStorage::Tus::Patience.new(http(2), 1.5)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    waits = 0
    raised = assert_raises(FileStorage::ConflictError) do
      loop do
        patience.wait(LOCKED)
        waits += 1
      end
    end
    elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_same LOCKED, raised
    assert_operator waits, :>=, 2, 'more than max_retries waits fit in the time'
    assert_in_delta 1.5, elapsed, 0.3
  end

  def test_progress_gives_it_its_whole_time_again
    spent = FileStorage::Tus::Patience.new(http(2), 0.2)
    renewed = FileStorage::Tus::Patience.new(http(2), 0.2)
    sleep(0.3)
    assert_raises(FileStorage::ConflictError) { spent.wait(LOCKED) }
    renewed.progressed
    renewed.wait(LOCKED)
  end

  def test_max_retries_zero_waits_for_a_locked_upload_only
    unavailable = FileStorage::ServiceUnavailableError.new(code: 'service_unavailable', message: 'HTTP 503', status: 503)
    assert_raises(FileStorage::ServiceUnavailableError) { FileStorage::Tus::Patience.new(http(0), 80).wait(unavailable) }
    FileStorage::Tus::Patience.new(http(0), 0.2).wait(LOCKED)
  end

  def test_a_retry_after_beyond_its_time_is_raised_at_once
    limited = FileStorage::RateLimitError.new(code: 'rate_limit_exceeded', message: 'Slow down', status: 429,
                                              headers: { 'retry-after' => '3600' })
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_raises(FileStorage::RateLimitError) { FileStorage::Tus::Patience.new(http(2), 80).wait(limited) }
    # Waiting would take the 80 s it allows (the hour asked for is longer): far from a loaded machine's slowest answer.
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 40
  end
end

class PathsTest < Minitest::Test
  def test_ids_are_escaped_in_paths
    assert_equal '/v1/files/a%20b%25/restore', FileStorage::Paths.of('/v1/files/%<file_id>s/restore', file_id: 'a b%')
  end
end

class StandardWebhooksTest < Minitest::Test
  BODY = '{"event":"file.uploaded"}'
  KEY_BYTES = (1..32).to_a.pack('C*')
  SECRET = "whsec_#{[KEY_BYTES].pack('m0')}"

  # The Standard Webhooks signature computed with the openssl command, independently of this library.
  def openssl_signature(hex_key, id, timestamp)
    digest = `printf '%s' '#{id}.#{timestamp}.#{BODY}' | openssl dgst -sha256 -mac HMAC -macopt hexkey:#{hex_key} -binary | base64`
    "v1,#{digest.strip}"
  end

  def headers(signature, timestamp = Time.now.to_i)
    { 'webhook-id' => 'evt_1', 'webhook-timestamp' => timestamp.to_s, 'webhook-signature' => signature }
  end

  def test_a_whsec_secret_is_keyed_by_its_decoded_bytes
    now = Time.now.to_i
    signature = openssl_signature(KEY_BYTES.unpack1('H*'), 'evt_1', now)
    assert FileStorage::Webhook.verify_standard(BODY, headers(signature, now), SECRET)
    refute FileStorage::Webhook.verify_standard("#{BODY} ", headers(signature, now), SECRET)
    refute FileStorage::Webhook.verify_standard(BODY, headers(signature, now), 'whsec_another')
  end

  def test_another_secret_is_keyed_by_its_utf8_bytes_and_any_of_several_signatures_or_secrets_will_do
    now = Time.now.to_i
    plain = 'conformance-webhook-secret-0123456789'
    signature = openssl_signature(plain.unpack1('H*'), 'evt_1', now)
    both = "v1,#{['x' * 32].pack('m0')} #{signature}"
    assert FileStorage::Webhook.verify_standard(BODY, headers(both, now), plain)
    assert FileStorage::Webhook.verify_standard(BODY, headers(signature, now), [SECRET, plain])
  end

  def test_a_timestamp_outside_the_tolerance_is_refused
    old = Time.now.to_i - 301
    signature = openssl_signature(KEY_BYTES.unpack1('H*'), 'evt_1', old)
    refute FileStorage::Webhook.verify_standard(BODY, headers(signature, old), SECRET)
    assert FileStorage::Webhook.verify_standard(BODY, headers(signature, old), SECRET, tolerance: 600)
  end
end

class BaseUrlCheckTest < Minitest::Test
  # Without a scheme the first request failed with URI::InvalidURIError or "not an HTTP URI"; refused at once instead.
  def test_a_base_url_that_is_not_http_or_https_is_refused_when_the_client_is_made
    ['127.0.0.1:8080', 'files.example.com', 'ftp://files.example.com'].each do |base_url|
      error = assert_raises(ArgumentError) { FileStorage::Client.new(api_key: 'key', base_url: base_url) }
      assert_includes error.message, 'https://files.example.com'
    end
    http = FileStorage::HttpClient.new(api_key: 'key', base_url: 'HTTPS://files.example.com/storage/')
    assert_equal 'HTTPS://files.example.com/storage', http.base_url
  end
end

class ReplayTimeTest < Minitest::Test
  # Time#utc converts its receiver in place: the caller's own Time used to come back in UTC after a replay.
  def test_a_replay_window_is_written_in_utc_and_the_callers_time_keeps_its_offset
    since = Time.new(2026, 11, 24, 12, 0, 0, '+02:00')
    assert_equal '2026-11-24T10:00:00.000Z', FileStorage::Webhooks.new(nil).iso8601(since)
    assert_equal 7200, since.utc_offset
  end
end

class ApiKeyKeptSecretTest < Minitest::Test
  KEY = 'fss_this-key-must-not-reach-a-log'

  # Ruby 3.1's NoMethodError message quotes the receiver's inspect, and error trackers log both.
  def test_the_api_key_shows_neither_in_inspect_nor_in_error_messages
    client = FileStorage::Client.new(api_key: KEY, base_url: 'https://files.example.com')
    [client, client.files, client.events.tail].each { |object| refute_includes object.inspect, KEY }
    error = assert_raises(NoMethodError) { client.files.no_such_method }
    refute_includes error.message, KEY
  end
end
