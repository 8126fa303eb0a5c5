# frozen_string_literal: true

module FileStorage
  # Uploads a source of known size through the tus 1.0 endpoint /v1/uploads, one chunk per PATCH. After a failed
  # PATCH it asks HEAD where the server stands and continues from there: the bytes sent so far are kept.
  module Tus
    VERSION = '1.0.0'
    # Failures after which the upload asks HEAD for the offset and continues.
    RESUMABLE_STATUSES = [409, 423, 429, 500, 502, 503, 504].freeze

    module_function

    # Creates the upload; answers its location (/v1/uploads/{id}), which `resume` takes to continue it later.
    def create(http, size, filename:, name: nil, folder_id: nil, overwrite: nil)
      metadata = encode_metadata('filename' => filename, 'name' => name, 'folder_id' => folder_id,
                                 'overwrite' => overwrite.nil? ? nil : overwrite.to_s)
      created = http.send_request(:post, '/v1/uploads',
                                  headers: { 'Tus-Resumable' => VERSION, 'Upload-Length' => size.to_s,
                                             'Upload-Metadata' => metadata })
      created.headers['location'] or
        raise Error.new(code: 'invalid_response', message: 'The tus endpoint answered without a Location.',
                        status: created.status)
    end

    # Sends the rest of the source from the server's offset; answers the id of the committed file.
    def resume(http, location, source, chunk_bytes:, on_progress: nil)
      offset, file_id = where(http, location)
      failures = 0
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
          failures = 0
          on_progress&.call(offset, source.size)
        rescue Error => e
          raise unless resumable?(e) && (failures += 1) <= http.max_retries

          wait = e.is_a?(RateLimitError) ? e.retry_after : nil
          sleep(wait || HttpClient.backoff(failures - 1))
          offset, file_id = where(http, location)
        end
      end
      file_id
    end

    # The server's offset for the upload, and the file id once it is complete.
    def where(http, location)
      head = http.send_request(:head, location, headers: { 'Tus-Resumable' => VERSION })
      [Integer(head.headers['upload-offset']), head.headers['x-file-id']]
    end

    def resumable?(error)
      error.status.nil? || RESUMABLE_STATUSES.include?(error.status)
    end

    # tus Upload-Metadata: comma-separated `key base64(value)` pairs.
    def encode_metadata(values)
      values.reject { |_, value| value.nil? }.map { |key, value| "#{key} #{[value.encode('UTF-8')].pack('m0')}" }.join(',')
    end
  end
end
