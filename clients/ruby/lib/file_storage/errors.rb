# frozen_string_literal: true

require 'json'
require 'time'

module FileStorage
  # Every error the client raises for an answer of the server, or for a failed exchange with it.
  class Error < StandardError
    # The envelope's error code, e.g. "not_found"; "connection_error" or "timeout" when no answer arrived.
    attr_reader :code
    # The HTTP status, or nil when no answer arrived.
    attr_reader :status
    # The envelope's details (a Hash), or nil.
    attr_reader :details
    # The X-Request-Id of the answer: quote it when asking for support.
    attr_reader :request_id
    # The answer's headers (lower-case names), or nil.
    attr_reader :headers

    def initialize(code:, message:, status: nil, details: nil, request_id: nil, headers: nil)
      super(message)
      @code = code
      @status = status
      @details = details
      @request_id = request_id
      @headers = headers
    end

    # Seconds the server asked to wait before the next request (its Retry-After header, on a 429 or a 503), or nil.
    # An answer that asks for longer than the client waits by itself (HttpClient::MAX_RETRY_AFTER) is raised at once
    # with it, for the caller to schedule the retry.
    def retry_after
      FileStorage.parse_retry_after(headers && headers['retry-after'])
    end
  end

  class InvalidRequestError < Error; end
  class AuthenticationError < Error; end
  class PermissionDeniedError < Error; end
  class NotFoundError < Error; end
  class ConflictError < Error; end
  # The same Idempotency-Key was sent with a different request (422), or its first request was still running (409)
  # after the client had waited `timeout` seconds for it (at once with max_retries: 0).
  class IdempotencyError < Error; end
  # An event feed cursor older than the retention (410): start again from a fresh listing.
  class CursorExpiredError < Error; end

  # 429: too many requests; `retry_after` says how many seconds to wait.
  class RateLimitError < Error; end

  class FileTooLargeError < Error
    def file_size = details&.fetch('file_size', nil)
    def max_size = details&.fetch('max_size', nil)
    def plan = details&.fetch('plan', nil)
  end

  class StorageExceededError < Error
    def current_usage = details&.fetch('current_usage', nil)
    def storage_limit = details&.fetch('storage_limit', nil)
    def required_space = details&.fetch('required_space', nil)
  end

  class ShareExpiredError < Error; end
  class PasswordRequiredError < Error; end
  class FileInfectedError < Error; end
  class ServiceUnavailableError < Error; end
  class InternalServerError < Error; end
  # No answer arrived: the connection failed or was cut.
  class ConnectionError < Error; end
  # No answer arrived within the client's timeout.
  class TimeoutError < Error; end
  # An answer that is not what the API sends: a body that is not the JSON expected (a captive portal's or a proxy's
  # HTML page), a tus creation without Location. The message quotes the start of the body.
  class InvalidResponseError < Error; end

  ERROR_CLASSES = {
    'invalid_request' => InvalidRequestError,
    'authentication_failed' => AuthenticationError,
    'permission_denied' => PermissionDeniedError,
    'not_found' => NotFoundError,
    'conflict' => ConflictError,
    'idempotency_key_in_use' => IdempotencyError,
    'idempotency_key_reused' => IdempotencyError,
    'cursor_expired' => CursorExpiredError,
    'rate_limit_exceeded' => RateLimitError,
    'file_too_large' => FileTooLargeError,
    'storage_exceeded' => StorageExceededError,
    'share_expired' => ShareExpiredError,
    'password_required' => PasswordRequiredError,
    'file_infected' => FileInfectedError,
    'service_unavailable' => ServiceUnavailableError,
    'internal_error' => InternalServerError
  }.freeze

  # Answers without an envelope (a proxy's 502, or any answer to HEAD, such as a locked upload's 423) still get the
  # class their status implies.
  CODES_BY_STATUS = {
    400 => 'invalid_request', 401 => 'authentication_failed', 403 => 'permission_denied', 404 => 'not_found',
    409 => 'conflict', 410 => 'not_found', 423 => 'conflict', 429 => 'rate_limit_exceeded', 503 => 'service_unavailable'
  }.freeze

  # The typed error for a failed answer; reads the error envelope when there is one.
  def self.error_from_response(status, headers, body)
    envelope = begin
      JSON.parse(body.to_s)
    rescue JSON::ParserError
      nil
    end
    error = envelope.is_a?(Hash) && envelope['error'].is_a?(Hash) ? envelope['error'] : {}
    code = error['code'] || CODES_BY_STATUS.fetch(status) { status >= 500 ? 'internal_error' : 'http_error' }
    klass = ERROR_CLASSES.fetch(code, Error)
    klass.new(code: code, message: error['message'] || "HTTP #{status}", status: status,
              details: error['details'], request_id: headers['x-request-id'], headers: headers)
  end

  BODY_EXCERPT_CHARS = 200

  # The InvalidResponseError for an answer whose body is not the JSON expected: its status, its content type and the
  # start of its body, so that a captive portal or a proxy's error page is recognised.
  def self.invalid_response(response)
    excerpt = response.body.to_s.dup.force_encoding(Encoding::UTF_8).scrub.gsub(/\s+/, ' ').strip
    excerpt = "#{excerpt[0, BODY_EXCERPT_CHARS]}…" if excerpt.length > BODY_EXCERPT_CHARS
    type = response.headers['content-type'] || 'no content type'
    InvalidResponseError.new(
      code: 'invalid_response', status: response.status, request_id: response.headers['x-request-id'],
      headers: response.headers,
      message: "#{response.request}: the server answered #{response.status} with a body that is not the JSON expected " \
               "(#{type}): #{excerpt.inspect}"
    )
  end

  # "GET /v1/files/…" for messages, without the query string: a download's carries a signature valid for an hour.
  def self.describe_request(method, path)
    "#{method.to_s.upcase} #{path.sub(/\?.*/m, '?<redacted>')}"
  end

  # Retry-After in seconds, from either of its forms (delta-seconds or an HTTP date).
  def self.parse_retry_after(value)
    return nil if value.nil? || value.strip.empty?
    return [Float(value), 0].max if value.strip.match?(/\A\d+(\.\d+)?\z/)

    [Time.httpdate(value) - Time.now, 0].max
  rescue ArgumentError
    nil
  end
end
