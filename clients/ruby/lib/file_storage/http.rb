# frozen_string_literal: true

require 'json'
require 'net/http'
require 'securerandom'
require 'uri'

module FileStorage
  # An answer: its status, its headers (lower-case names), its body (nil when streamed to a block) and the request it
  # answers, as messages show it ("GET /v1/files", no query string).
  Response = Struct.new(:status, :headers, :body, :request) do
    # The body's JSON object; InvalidResponseError when it is not one (a captive portal's or a proxy's HTML page).
    def json
      parsed = JSON.parse(body.to_s)
      parsed.is_a?(Hash) ? parsed : raise(FileStorage.invalid_response(self))
    rescue JSON::ParserError
      raise FileStorage.invalid_response(self)
    end
  end

  # A request body that can be produced again for a retry, or not (a stream given by the caller).
  # `open` answers an IO-like object (read(length, buffer)); `size` is nil when unknown (sent chunked).
  RequestBody = Struct.new(:opener, :size, :content_type, :replayable, keyword_init: true) do
    def open = opener.call
  end

  # A streamed answer's body on its way to the caller's block, across attempts. Once bytes have reached the block, a
  # failed attempt is never started again from byte 0 (the block would get them twice): the next attempt asks for
  # the rest of the same version of the file (Range from the bytes delivered, If-Range its ETag), and an answer that
  # is not exactly that rest ends the download with a ConnectionError. A body that ends before its Content-Length
  # (Net::HTTP takes that early end for the end) is such a cut too. A download of a range (206) continues the same
  # way, within the bytes its first answer's Content-Range named.
  #
  # A proxy or cache that does not do ranges answers 200 with the whole file: the bytes before the ones asked for are
  # skipped and those after them are not read, so the block gets exactly the range (or the rest) it asked for.
  class BodyStream
    # The body ended before its Content-Length: the peer closed the connection part-way.
    class Incomplete < IOError; end

    attr_reader :delivered

    # `range` is the Range header the caller asked for ("bytes=2-5", "bytes=7-", "bytes=-3"), or nil.
    def initialize(sink, range = nil)
      @sink = sink
      @delivered = 0
      @etag = nil
      @asked = range && range.match(/\Abytes=(\d*)-(\d*)\z/)&.captures
      # The first and last byte of the file to deliver (nil: to the end of the file), once the first answer said.
      @first = 0
      @last = nil
    end

    # Whether a failed attempt can be tried again: nothing delivered yet, or a version whose rest can be asked for.
    def resumable? = @delivered.zero? || !@etag.nil?

    # Whether every byte asked for has been delivered, with more of a whole-file answer left unread.
    def complete? = !@left.nil? && @left.zero?

    # The headers of the next attempt.
    def headers(base)
      @delivered.zero? ? base : base.merge('Range' => "bytes=#{@first + @delivered}-#{@last}", 'If-Range' => @etag)
    end

    # Called with each successful answer's head, before its body is delivered.
    def start(status, headers)
      length = headers['content-length'] && Integer(headers['content-length'], exception: false)
      @received = 0
      @length = length
      @skip = 0
      @left = nil
      if @delivered.zero?
        # Only an answer with a strong ETag can be continued by a range of the same version.
        @etag = [200, 206].include?(status) && headers['etag']&.start_with?('"') ? headers['etag'] : nil
        if status == 206
          @first, @last = BodyStream.content_range(headers).map { |byte| Integer(byte) }
          return
        end

        whole_file(status, length)
      else
        first, = BodyStream.content_range(headers)
        return if status == 206 && first && Integer(first) == @first + @delivered && headers['etag'] == @etag

        # A whole-file answer of the same version carries the rest too, after the bytes already delivered.
        if status == 200 && headers['etag'] == @etag
          @skip = @first + @delivered
        else
          reason = status == 200 ? 'the file changed while it downloaded' : "the server did not send the rest (HTTP #{status})"
          raise ConnectionError.new(code: 'connection_error',
                                    message: "The download was cut after #{@delivered} bytes and #{reason}; download it again.")
        end
      end
      @left = @last && (@last - @first - @delivered + 1)
    end

    # The first and last byte a 206's Content-Range names ("bytes 7-9/10"), as strings, or [].
    def self.content_range(headers) = headers['content-range'].to_s.match(%r{\Abytes (\d+)-(\d+)/\d+\z})&.captures.to_a

    def <<(chunk)
      @received += chunk.bytesize
      if @skip.positive?
        skipped = [@skip, chunk.bytesize].min
        @skip -= skipped
        chunk = chunk.byteslice(skipped..)
      end
      chunk = chunk.byteslice(0, @left) if @left && chunk.bytesize > @left
      @left -= chunk.bytesize if @left
      return if chunk.empty?

      @sink.call(chunk)
      @delivered += chunk.bytesize
    end

    # Called once an answer's body has been read to its end.
    def finish
      raise Incomplete, "the body ended after #{@received} of #{@length} bytes" if @length && @received < @length
    end

    private

    # The first answer is the whole file (200): where the bytes asked for are in it.
    def whole_file(status, length)
      first, last = @asked
      if status != 200 || @asked.nil?
        @first, @last = 0, nil
      elsif first.empty?
        # The last `last` bytes: where they start needs the file's length.
        unless length
          raise InvalidResponseError.new(code: 'invalid_response', status: status,
                                         message: "Asked for the last #{last} bytes, the server sent the whole file " \
                                                  'without its length (a proxy that ignores Range?)')
        end
        @first, @last = [length - Integer(last), 0].max, length - 1
      else
        @first, @last = Integer(first), last.empty? ? nil : Integer(last)
      end
      @skip = @first
    end
  end

  # Sends requests: authentication, timeouts, retries with backoff and the automatic Idempotency-Key of POSTs.
  class HttpClient
    RETRYABLE_STATUSES = [429, 502, 503, 504].freeze
    MAX_BACKOFF = 8.0
    # The longest Retry-After waited out before a retry; a longer one is raised at once.
    MAX_RETRY_AFTER = 120
    NETWORK_ERRORS = [IOError, SystemCallError, SocketError, EOFError, OpenSSL::SSL::SSLError,
                      Net::HTTPBadResponse].freeze

    attr_reader :base_url, :timeout, :max_retries

    def initialize(api_key:, base_url:, timeout: 60, max_retries: 2)
      raise ArgumentError, 'FileStorage needs an api_key.' if api_key.nil? || api_key.empty?
      raise ArgumentError, 'FileStorage needs a base_url.' if base_url.nil? || base_url.empty?
      unless base_url.match?(%r{\Ahttps?://[^/?#]+}i)
        raise ArgumentError, "base_url must be an http(s) URL such as https://files.example.com, not #{base_url.inspect}."
      end

      @api_key = api_key
      @base_url = base_url.sub(%r{/+\z}, '')
      @timeout = timeout
      @max_retries = max_retries
    end

    # Without the API key: every object of the client shows this one in its own inspect, and Ruby 3.1 quotes a
    # receiver's inspect in a NoMethodError's message, which ends up in logs and error trackers.
    def inspect = "#<#{self.class.name} base_url=#{@base_url.inspect} api_key=[redacted]>"

    # A path goes under the base URL, path prefix included (a server mounted under /storage by a reverse proxy):
    # "/v1/files" -> "https://files.example.com/storage/v1/files". An absolute URL (a tus Location) is used as it is.
    def url(path, query = nil)
      uri = URI.join("#{@base_url}/", path.sub(%r{\A/}, ''))
      params = (query || {}).reject { |_, value| value.nil? }.map { |key, value| [key.to_s, value.to_s] }
      uri.query = URI.encode_www_form(URI.decode_www_form(uri.query || '') + params) unless params.empty?
      uri
    end

    # The JSON envelope's `data` of a successful answer.
    def data(method, path, **options)
      envelope(method, path, **options)['data']
    end

    def envelope(method, path, **options)
      send_request(method, path, **options).json
    end

    # One logical request: retried on 429 (after Retry-After), 502/503/504 and network errors, with exponential
    # backoff, as long as its body can be sent again; a Retry-After beyond MAX_RETRY_AFTER is raised at once. Every attempt of a POST carries the same Idempotency-Key,
    # so a retry after a lost answer replays the first result instead of acting twice. A retry that finds the first
    # attempt still running (409 idempotency_key_in_use) waits for it, Retry-After at a time, for up to `timeout`
    # seconds without counting as a retry, and then gets its answer.
    # With a block, a successful answer's body is streamed to it in chunks instead of being read whole; an attempt
    # cut after some of it was delivered is continued from there, never repeated (BodyStream). `refresh_path`, a Proc,
    # gives the path again for each later attempt: a signed link's fresh signature, as a long download outlives the
    # hour of the link it began with.
    def send_request(method, path, query: nil, json: nil, body: nil, headers: {}, anonymous: false, retryable: true,
                     refresh_path: nil, &on_chunk)
      headers = { 'Accept' => 'application/json' }.merge(headers)
      headers['Authorization'] = "Bearer #{@api_key}" unless anonymous
      if method == :post && headers.keys.none? { |key| key.casecmp?('idempotency-key') }
        headers['Idempotency-Key'] = SecureRandom.uuid
      end
      headers['Content-Type'] = 'application/json' unless json.nil?
      headers['Content-Type'] = body.content_type if body&.content_type
      # Ranges count the bytes as sent: a body compressed on the way could not be continued.
      headers['Accept-Encoding'] = 'identity' if on_chunk
      uri = url(path, query)
      shown = FileStorage.describe_request(method, path)
      retries = !retryable || (body && !body.replayable) ? 0 : @max_retries
      stream = on_chunk && BodyStream.new(on_chunk, headers['Range'])

      attempt = 0
      in_use_until = nil
      loop do
        uri = url(refresh_path.call, query) if refresh_path && attempt.positive?
        response = begin
          perform(method, uri, stream ? stream.headers(headers) : headers, json, body, stream, shown)
        rescue Net::OpenTimeout, Net::ReadTimeout, Net::WriteTimeout => e
          if give_up?(attempt, retries, stream)
            raise TimeoutError.new(code: 'timeout', message: "No answer from #{shown} within #{@timeout} s " \
                                                             "(#{e.class})#{cut_at(stream)}")
          end
        rescue *NETWORK_ERRORS => e
          if give_up?(attempt, retries, stream)
            cut = e.is_a?(BodyStream::Incomplete) ? '' : cut_at(stream)
            raise ConnectionError.new(code: 'connection_error', message: "#{shown} failed: #{e.message}#{cut}")
          end
        end
        if response.nil?
          sleep(HttpClient.backoff(attempt))
        elsif response.status < 400
          return response
        elsif retries.positive? && key_in_use?(response) &&
              (in_use_until ||= HttpClient.now + (@timeout || MAX_RETRY_AFTER)) > HttpClient.now
          retry_after = FileStorage.parse_retry_after(response.headers['retry-after']) || 1
          sleep([[retry_after, 0.1].max, in_use_until - HttpClient.now].min)
          next
        elsif attempt < retries && RETRYABLE_STATUSES.include?(response.status) && !waits_too_long?(response)
          sleep(FileStorage.parse_retry_after(response.headers['retry-after']) || HttpClient.backoff(attempt))
        else
          raise FileStorage.error_from_response(response.status, response.headers, response.body)
        end
        attempt += 1
      end
    end

    # 0.5 s, 1 s, 2 s… with full jitter, at most 8 s.
    def self.backoff(attempt)
      ceiling = [MAX_BACKOFF, 0.5 * (2**attempt)].min
      (ceiling / 2) + (rand * ceiling / 2)
    end

    def self.now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    private

    # The server asks for a longer wait than this client makes by itself: an earlier retry could only be refused again,
    # so the error is raised at once with its retry_after, for the caller to schedule.
    def waits_too_long?(response)
      retry_after = FileStorage.parse_retry_after(response.headers['retry-after'])
      !retry_after.nil? && retry_after > MAX_RETRY_AFTER
    end

    def give_up?(attempt, retries, stream) = attempt >= retries || (stream && !stream.resumable?)

    def cut_at(stream) = stream&.delivered&.positive? ? " after #{stream.delivered} bytes of the body" : ''

    # 409 idempotency_key_in_use: the first request with this Idempotency-Key still runs (unlike a plain 409 conflict).
    def key_in_use?(response)
      response.status == 409 && FileStorage.error_from_response(409, response.headers, response.body).code == 'idempotency_key_in_use'
    end

    def perform(method, uri, headers, json, body, stream, shown)
      request = Net::HTTPGenericRequest.new(method.to_s.upcase, !json.nil? || !body.nil?, method != :head, uri, headers)
      if json
        request.body = JSON.generate(json)
      elsif body
        request.body_stream = body.open
        if body.size
          request['Content-Length'] = body.size.to_s
        else
          request['Transfer-Encoding'] = 'chunked'
        end
      elsif %i[post patch].include?(method)
        request['Content-Length'] = '0'
      end
      # Net::HTTP would send an idempotent request again by itself after a cut (max_retries, default 1), replaying a
      # streamed body from byte 0 into the caller's block: every retry is decided here instead.
      Net::HTTP.start(uri.host, uri.port, use_ssl: uri.scheme == 'https', open_timeout: @timeout,
                                          read_timeout: @timeout, write_timeout: @timeout, max_retries: 0) do |http|
        http.request(request) do |answer|
          status = answer.code.to_i
          answer_headers = answer.to_hash.transform_values(&:first)
          if status < 400 && stream
            stream.start(status, answer_headers)
            answer.read_body do |chunk|
              stream << chunk
              # The rest of a whole-file answer is past the range asked for: the connection is closed unread.
              return Response.new(status, answer_headers, nil, shown) if stream.complete?
            end
            stream.finish
            return Response.new(status, answer_headers, nil, shown)
          end
          return Response.new(status, answer_headers, answer.read_body, shown)
        end
      end
    ensure
      request&.body_stream&.close if request&.body_stream.respond_to?(:close)
    end
  end
end
