# frozen_string_literal: true

module FileStorage
  # Uploads a source of known size through the tus 1.0 endpoint /v1/uploads, one chunk per PATCH. After a failed
  # PATCH it asks HEAD where the server stands and continues from there: the bytes sent so far are kept.
  module Tus
    VERSION = '1.0.0'
    # Failures after which the upload asks HEAD for the offset and continues.
    RESUMABLE_STATUSES = [409, 423, 429, 500, 502, 503, 504].freeze
    # How long an upload keeps trying without progress, in seconds. A PATCH cut off half-way (this client's own, after
    # a network failure) can hold the upload, HEAD and PATCH answering 423, until the server's idle timeout ends it
    # (60 s by default) and its lock expires (15 s).
    PATIENCE = 80

    # The waits between the attempts of one upload: backoff (or Retry-After), until PATIENCE seconds have passed
    # without a PATCH going through. max_retries: 0 turns them off, except the wait for a locked upload (423): that is
    # no failure to retry but another request on the upload, often this client's own cut-off PATCH, still running.
    class Patience
      def initialize(http, seconds = PATIENCE)
        @retries = http.max_retries.positive?
        @seconds = seconds
        progressed
      end

      def progressed
        @deadline = HttpClient.now + @seconds
        @failures = 0
      end

      # Sleeps before the next attempt after `error`; raises `error` when there is no time left, or when the server
      # asks for a longer wait (Retry-After) than is left: an earlier attempt could only be refused again.
      def wait(error)
        left = @deadline - HttpClient.now
        raise error unless (@retries || error.status == 423) && left.positive?

        retry_after = error.retry_after
        raise error if retry_after && retry_after > left

        delay = retry_after || HttpClient.backoff(@failures)
        @failures += 1
        sleep([delay, left].min)
      end
    end

    module_function

    # Creates the upload; answers its location (/v1/uploads/{id}), which `resume` takes to continue it later. Created
    # again with the same `idempotency_key` (a restarted process), it answers the same upload.
    def create(http, size, filename:, name: nil, folder_id: nil, overwrite: nil, idempotency_key: nil)
      metadata = encode_metadata('filename' => filename, 'name' => name, 'folder_id' => folder_id,
                                 'overwrite' => overwrite.nil? ? nil : overwrite.to_s)
      headers = { 'Tus-Resumable' => VERSION, 'Upload-Length' => size.to_s, 'Upload-Metadata' => metadata }
      headers['Idempotency-Key'] = idempotency_key if idempotency_key
      created = http.send_request(:post, '/v1/uploads', headers: headers)
      created.headers['location'] or
        raise InvalidResponseError.new(code: 'invalid_response', message: 'The tus endpoint answered without a Location.',
                                       status: created.status, headers: created.headers)
    end

    # Sends the rest of the source from the server's offset; answers the id of the committed file. A source of another
    # size than the upload's is refused before a byte is sent (the server checks only the length; a shorter one sent
    # empty PATCHes forever).
    def resume(http, location, source, chunk_bytes:, on_progress: nil)
      patience = Patience.new(http)
      offset, file_id, length = where(http, location, patience)
      if length && length != source.size
        raise ArgumentError,
              "The upload at #{location} is #{length} bytes long; the source given to resume it is #{source.size}."
      end
      while file_id.nil?
        begin
          chunk = source.chunk(offset, [source.size, offset + chunk_bytes].min)
          answer = http.send_request(:patch, location,
                                     headers: { 'Tus-Resumable' => VERSION, 'Upload-Offset' => offset.to_s,
                                                'Content-Type' => 'application/offset+octet-stream' },
                                     body: RequestBody.new(opener: -> { StringIO.new(chunk) }, size: chunk.bytesize,
                                                           replayable: true),
                                     retryable: false)
          offset = Integer(answer.headers['upload-offset'])
          file_id = answer.headers['x-file-id']
          patience.progressed
          on_progress&.call(offset, source.size)
        rescue Error => e
          raise unless e.status.nil? || RESUMABLE_STATUSES.include?(e.status)

          patience.wait(e)
          offset, file_id = where(http, location, patience)
        end
      end
      file_id
    end

    # The server's offset for the upload, the file id once it is complete, and the upload's length. Asked again while
    # the upload is locked (423), rate limited, or the server or network fails, as long as `patience` lasts.
    def where(http, location, patience = Patience.new(http))
      head = http.send_request(:head, location, headers: { 'Tus-Resumable' => VERSION }, retryable: false)
      length = head.headers['upload-length']
      [Integer(head.headers['upload-offset']), head.headers['x-file-id'], length && Integer(length)]
    rescue Error => e
      raise unless e.status.nil? || [423, 429].include?(e.status) || e.status >= 500

      patience.wait(e)
      retry
    end

    # Deletes the upload and the bytes sent so far (tus termination); the server gives its reserved quota back.
    def terminate(http, location)
      http.send_request(:delete, location, headers: { 'Tus-Resumable' => VERSION })
      nil
    end

    # tus Upload-Metadata: comma-separated `key base64(value)` pairs.
    def encode_metadata(values)
      values.reject { |_, value| value.nil? }.map { |key, value| "#{key} #{[utf8_bytes(value)].pack('m0')}" }.join(',')
    end

    # A binary string's bytes are sent as they are, as the multipart upload sends them: under the C locale Ruby tags
    # paths from ARGV, ENV and Dir binary, and converting their UTF-8 bytes would raise.
    def utf8_bytes(value) = value.encoding == Encoding::BINARY ? value : value.encode('UTF-8')
  end
end
