# frozen_string_literal: true

require 'erb'

module FileStorage
  # Builds `/v1/files/{id}`-style paths with each id checked and escaped.
  module Paths
    module_function

    # `Paths.of('/v1/files/%<file_id>s/restore', file_id: id)`: each id checked (`id!`), then percent-encoded.
    def of(template, **ids)
      ids.each { |field, value| id!(value, field) }
      format(template, **ids.transform_values { |value| ERB::Util.url_encode(value) })
    end

    # An id as the API gives them (`file_...`) names one resource. An empty one, `.` or `..`, or one with `/`, `?` or
    # `#`, would send the request to another route (the listing, the parent) or a path a proxy rewrites: it is refused
    # here, before sending, instead of ending in a confusing 404 or another route's answer.
    def id!(value, field)
      return if value.is_a?(String) && !['', '.', '..'].include?(value) && !value.match?(%r{[/?#]})

      raise invalid(field, 'must be an id as the API gives it (not empty, . or .., and without /, ? or #), ' \
                           "not #{value.inspect}")
    end

    # The path segment of a share url's token (its last path segment) or of the token itself, percent-encoded. A token
    # is whatever a visitor pasted, so it is sent as it is, `.` and `..` encoded too (a proxy would resolve them as the
    # parent path), and the server answers not found for one it never gave; only an empty one is refused.
    def share_token(url_or_token)
      token = url_or_token.to_s
      if token.match?(%r{\Ahttps?://}i)
        token = URI::DEFAULT_PARSER.unescape(URI(token).path.split('/').reject(&:empty?).last.to_s)
      end
      raise invalid('url_or_token', "must be a share url or its token, not #{url_or_token.inspect}") if token.empty?

      ['.', '..'].include?(token) ? token.gsub('.', '%2E') : ERB::Util.url_encode(token)
    end

    # The error the server would answer for a bad field, raised before any request is sent.
    def invalid(field, problem)
      InvalidRequestError.new(code: 'invalid_request', message: "Request validation failed: #{field}: #{problem}",
                              details: { 'fields' => [{ 'field' => field.to_s, 'message' => problem }] })
    end
  end

  # Options every POST takes: an Idempotency-Key is generated unless given (give one to retry across restarts).
  module PostOptions
    private

    def idempotency(key) = key ? { 'Idempotency-Key' => key } : {}
  end

  # Files: upload (streamed, resumable above a threshold), list, get, update, delete, restore, download, thumbnail.
  class Files
    include Listing
    include PostOptions

    def initialize(http, resumable_threshold:, resumable_chunk:)
      @http = http
      @resumable_threshold = resumable_threshold
      @resumable_chunk = resumable_chunk
    end

    # Uploads a file from a path or an IO, streamed; a seekable IO (a File, a StringIO) from where it stands. A path or
    # a seekable IO at or above the resumable threshold goes through the tus endpoint in chunks, resuming after
    # failures; anything else is one multipart request. A path or a seekable IO is retried; an IO that cannot seek
    # (a pipe) is read once. `on_progress` is called with (bytes_sent, total_or_nil).
    def upload(source, name: nil, folder_id: nil, overwrite: nil, on_progress: nil, idempotency_key: nil,
               resumable_threshold: @resumable_threshold)
      opened = UploadSource.open(source)
      filename = name || opened.name
      raise ArgumentError, 'upload needs name: when the source is a stream without a path.' if filename.nil?

      if opened.replayable? && opened.size.positive? && opened.size >= resumable_threshold
        location = Tus.create(@http, opened.size, filename: filename, name: name, folder_id:,
                                                  overwrite: overwrite, idempotency_key: idempotency_key)
        return get(Tus.resume(@http, location, opened, chunk_bytes: @resumable_chunk, on_progress: on_progress))
      end
      fields = { 'folder_id' => folder_id, 'name' => name, 'overwrite' => overwrite.nil? ? nil : overwrite.to_s }
      body = MultipartBody.build(opened, filename, fields, on_progress: on_progress)
      @http.data(:post, '/v1/files/upload', body: body, headers: idempotency(idempotency_key))
    end

    # Starts a resumable upload of a path (or a seekable IO) and answers its location, to be sent with `resume_upload`, even from
    # another process after this one stopped.
    def start_resumable_upload(path, name: nil, folder_id: nil, overwrite: nil, idempotency_key: nil)
      opened = UploadSource.open(path)
      Tus.create(@http, opened.size, filename: name || opened.name, name: name, folder_id:,
                                     overwrite: overwrite, idempotency_key: idempotency_key)
    end

    # Sends what the server has not got yet of a resumable upload, from its offset; answers the stored file.
    def resume_upload(location, path, on_progress: nil)
      get(Tus.resume(@http, location, UploadSource.open(path), chunk_bytes: @resumable_chunk, on_progress: on_progress))
    end

    # Gives up a resumable upload: deletes it with the bytes sent so far, and its reserved quota is given back.
    def abort_upload(location) = Tus.terminate(@http, location)

    # One page of the files of a folder (the root by default): page:, per_page:, folder_id:, sort:, type:, search:,
    # and cursor: (the pagination's next_cursor of the page before, with the same filters).
    def list(**query) = fetch_page('/v1/files', query)

    # Every file, page after page: `client.files.each(search: 'report').each { |file| ... }`.
    def each(**query, &)
      items = each_item('/v1/files', query)
      block_given? ? items.each(&) : items
    end

    def get(file_id) = @http.data(:get, Paths.of('/v1/files/%<file_id>s', file_id:))

    # Renames and/or moves a file (`folder_id: nil` moves it to the root).
    def update(file_id, name: nil, folder_id: :unchanged)
      changes = {}
      changes['name'] = name unless name.nil?
      changes['folder_id'] = folder_id unless folder_id == :unchanged
      @http.data(:patch, Paths.of('/v1/files/%<file_id>s', file_id:), json: changes)
    end

    # Moves a file to the trash, or with `permanent: true` (an elevated key) deletes it for good.
    def delete(file_id, permanent: nil)
      @http.data(:delete, Paths.of('/v1/files/%<file_id>s', file_id:), query: { permanent: permanent })
    end

    def bulk_delete(file_ids, idempotency_key: nil)
      @http.data(:post, '/v1/files/bulk-delete', json: { file_ids: file_ids }, headers: idempotency(idempotency_key))
    end

    def restore(file_id, idempotency_key: nil)
      @http.data(:post, Paths.of('/v1/files/%<file_id>s/restore', file_id:), headers: idempotency(idempotency_key))
    end

    # Streams the file's content to `destination`: a path (a failed download leaves no partial file behind), an
    # IO (anything with #write), or a block that receives each chunk. With `range:` (byte indexes, as a Range indexes
    # an Array: 0..99, 100..., -500.. for the last 500 bytes), only those bytes (HTTP Range); one that starts past the
    # end raises InvalidRequestError (416).
    def download(file_id, destination = nil, range: nil, &on_chunk)
      signed_content(file_id, 'download', destination, on_chunk, FileStorage.range_header(range))
    end

    # Streams the file's thumbnail, a WebP of at most 256 x 256, to `destination` as #download does the content.
    # Images, videos and PDFs get one shortly after their upload (a background job); until then, and for other types,
    # raises NotFoundError.
    def thumbnail(file_id, destination = nil, &on_chunk)
      signed_content(file_id, 'thumbnail', destination, on_chunk, {})
    end

    private

    def signed_content(file_id, route, destination, on_chunk, range_header)
      # These routes take a signed link, not the key: the file's fresh download_url / thumbnail_url is that link. Its
      # signature (the query) goes to the route under this client's base URL, like every request: the link's own
      # address is the server's PUBLIC_BASE_URL, which this client may not reach, and its path repeats the prefix the
      # base URL already has.
      # A continuation after a cut takes a fresh link too: a long download (gigabytes over a slow line) outlives its
      # link's hour.
      signed_path = lambda do
        link = get(file_id)["#{route}_url"]
        unless link
          raise NotFoundError.new(code: 'not_found', status: 404,
                                  message: "File #{file_id} has no thumbnail (not yet made, or its type gets none)")
        end
        "#{Paths.of("/v1/files/%<file_id>s/#{route}", file_id:)}?#{URI(link).query}"
      end
      path = signed_path.call
      FileStorage.stream_to(destination, on_chunk) do |sink|
        @http.send_request(:get, path, anonymous: true, headers: { 'Accept' => '*/*' }.merge(range_header),
                                       refresh_path: signed_path, &sink)
      end
    end
  end

  # The Range header of a Range of byte indexes, read as it indexes an Array: `2..5` and `2...6` bytes 2 to 5, `7..`
  # from byte 7 to the end, `..2` the first three bytes, `-3..` the last three. None for nil.
  def self.range_header(range)
    return {} if range.nil?
    unless range.is_a?(Range) && [range.begin, range.end].all? { |index| index.nil? || index.is_a?(Integer) }
      raise ArgumentError, "range: takes a Range of byte indexes such as 0..99, not #{range.inspect}"
    end

    first = range.begin || 0
    last = range.end && (range.exclude_end? ? range.end - 1 : range.end)
    if first.negative? || last&.negative?
      raise ArgumentError, "range: #{range.inspect}: only an endless range (-500..) counts from the end" if last

      return { 'Range' => "bytes=#{first}" }
    end
    { 'Range' => "bytes=#{first}-#{last}" }
  end

  # Streams a download into a path, an IO or a block; a path is removed again when the download fails.
  def self.stream_to(destination, on_chunk)
    if destination.is_a?(String) || (defined?(Pathname) && destination.is_a?(Pathname))
      begin
        File.open(destination.to_s, 'wb') { |file| yield ->(chunk) { file.write(chunk) } }
      rescue StandardError
        File.delete(destination.to_s) if File.exist?(destination.to_s)
        raise
      end
    elsif destination.respond_to?(:write)
      yield ->(chunk) { destination.write(chunk) }
    elsif on_chunk
      yield on_chunk
    else
      raise ArgumentError, 'download needs a path, an IO or a block.'
    end
    nil
  end

  class Trash
    include Listing

    def initialize(http) = @http = http

    # page:, per_page:, sort:, search:, cursor:
    def list(**query) = fetch_page('/v1/trash', query)

    def each(**query, &)
      items = each_item('/v1/trash', query)
      block_given? ? items.each(&) : items
    end

    # Deletes every file in the trash for good.
    def empty = @http.data(:delete, '/v1/trash')
  end

  class Folders
    include Listing
    include PostOptions

    def initialize(http) = @http = http

    def create(name:, parent_id: nil, idempotency_key: nil)
      body = { name: name }
      body[:parent_id] = parent_id unless parent_id.nil?
      @http.data(:post, '/v1/folders', json: body, headers: idempotency(idempotency_key))
    end

    # page:, per_page:, parent_id:, sort:, search:, cursor:
    def list(**query) = fetch_page('/v1/folders', query)

    def each(**query, &)
      items = each_item('/v1/folders', query)
      block_given? ? items.each(&) : items
    end

    # One folder; following `parent_id` up to nil gives its path from the root.
    def get(folder_id) = @http.data(:get, Paths.of('/v1/folders/%<folder_id>s', folder_id:))

    # Renames and/or moves a folder (`parent_id: nil` moves it to the root).
    def update(folder_id, name: nil, parent_id: :unchanged)
      changes = {}
      changes['name'] = name unless name.nil?
      changes['parent_id'] = parent_id unless parent_id == :unchanged
      @http.data(:patch, Paths.of('/v1/folders/%<folder_id>s', folder_id:), json: changes)
    end

    def delete(folder_id) = @http.data(:delete, Paths.of('/v1/folders/%<folder_id>s', folder_id:))
  end

  class Shares
    include Listing
    include PostOptions

    def initialize(http) = @http = http

    # file_id:, and optionally password: and expires_in: (seconds until the link expires, 60 to 31536000; without it
    # the link does not expire). The answer's expires_at says when.
    def create(idempotency_key: nil, **share)
      @http.data(:post, '/v1/shares', json: share, headers: idempotency(idempotency_key))
    end

    # page:, per_page:, file_id:, cursor:. Each link with its status and analytics, as `get` answers it (`active`, `revoked_at`,
    # `invalidated_at`, `access_count`, `last_accessed_at`), revoked and expired links too.
    def list(**query) = fetch_page('/v1/shares', query)

    def each(**query, &)
      items = each_item('/v1/shares', query)
      block_given? ? items.each(&) : items
    end

    # One share link with its status and analytics (`active`, `revoked_at`, `access_count`, …); revoked and expired
    # links too.
    def get(share_id) = @http.data(:get, Paths.of('/v1/shares/%<share_id>s', share_id:))

    def revoke(share_id) = @http.data(:delete, Paths.of('/v1/shares/%<share_id>s', share_id:))

    # What a share link shows its visitor, without an API key. Takes the share's url or its token.
    def open(url_or_token, password: nil)
      @http.data(:get, "/s/#{Paths.share_token(url_or_token)}", anonymous: true, headers: password_header(password))
    end

    # The shared file's content as a visitor downloads it, to a path, an IO or a block; with `range:`, only those
    # bytes, as Files#download takes them.
    def download(url_or_token, destination = nil, password: nil, range: nil, &on_chunk)
      headers = { 'Accept' => '*/*' }.merge(password_header(password), FileStorage.range_header(range))
      FileStorage.stream_to(destination, on_chunk) do |sink|
        @http.send_request(:get, "/s/#{Paths.share_token(url_or_token)}/download", anonymous: true, headers:, &sink)
      end
    end

    private

    def password_header(password) = password.nil? ? {} : { 'X-Share-Password' => password }
  end

  class Webhooks
    include Listing
    include PostOptions

    def initialize(http) = @http = http

    # Registers a webhook (url:, events:); the answer shows its signing secret this once.
    def create(idempotency_key: nil, **webhook)
      @http.data(:post, '/v1/webhooks', json: webhook, headers: idempotency(idempotency_key))
    end

    def list(**query) = fetch_page('/v1/webhooks', query)

    def each(**query, &)
      items = each_item('/v1/webhooks', query)
      block_given? ? items.each(&) : items
    end

    def get(webhook_id) = @http.data(:get, hook_path(webhook_id))

    def update(webhook_id, **changes) = @http.data(:patch, hook_path(webhook_id), json: changes)

    def delete(webhook_id) = @http.data(:delete, hook_path(webhook_id))

    # Sends a `webhook.test` event to the webhook; answers the queued delivery.
    def test(webhook_id, idempotency_key: nil)
      @http.data(:post, hook_path(webhook_id, '/test'), headers: idempotency(idempotency_key))
    end

    # One page of a webhook's deliveries: page:, per_page:, status:, cursor:
    def deliveries(webhook_id, **query) = fetch_page(hook_path(webhook_id, '/deliveries'), query)

    def each_delivery(webhook_id, **query, &)
      items = each_item(hook_path(webhook_id, '/deliveries'), query)
      block_given? ? items.each(&) : items
    end

    # getutc, not utc: Time#utc would convert the caller's own Time in place.
    def iso8601(time) = time.respond_to?(:getutc) ? time.getutc.strftime('%Y-%m-%dT%H:%M:%S.%LZ') : time.to_s

    def delivery(webhook_id, delivery_id)
      @http.data(:get, hook_path(webhook_id, '/deliveries/%<delivery_id>s', delivery_id:))
    end

    # A new signing secret, shown this once. For `expires_in` seconds (default 24 hours) deliveries are signed
    # with both the old and the new secret, so receivers can switch over.
    def rotate_secret(webhook_id, expires_in: nil, idempotency_key: nil)
      body = expires_in.nil? ? {} : { expires_in: expires_in }
      @http.data(:post, hook_path(webhook_id, '/rotate-secret'), json: body, headers: idempotency(idempotency_key))
    end

    # Queues a new delivery of every retained event from `since` until `before` (exclusive; now when nil) that the
    # webhook subscribes to; answers { 'queued' => count }. Times are Time objects or ISO 8601 strings.
    def replay(webhook_id, since:, before: nil, idempotency_key: nil)
      window = { since: iso8601(since) }
      window[:until] = iso8601(before) unless before.nil?
      @http.data(:post, hook_path(webhook_id, '/replay'), json: window, headers: idempotency(idempotency_key))
    end

    # Sends a delivery again (same delivery id); answers the delivery, queued.
    def redeliver(webhook_id, delivery_id, idempotency_key: nil)
      @http.data(:post, hook_path(webhook_id, '/deliveries/%<delivery_id>s/redeliver', delivery_id:),
                 headers: idempotency(idempotency_key))
    end

    private

    # `/v1/webhooks/{webhook_id}` and what follows it, each id checked and escaped (Paths.of).
    def hook_path(webhook_id, tail = '', **ids) = Paths.of("/v1/webhooks/%<webhook_id>s#{tail}", webhook_id:, **ids)
  end

  class ApiKeys
    include Listing
    include PostOptions

    def initialize(http) = @http = http

    # Creates a key (name:, scopes:); the answer shows the key itself this once.
    def create(idempotency_key: nil, **key)
      @http.data(:post, '/v1/api-keys', json: key, headers: idempotency(idempotency_key))
    end

    def list(**query) = fetch_page('/v1/api-keys', query)

    def each(**query, &)
      items = each_item('/v1/api-keys', query)
      block_given? ? items.each(&) : items
    end

    def revoke(key_id) = @http.data(:delete, Paths.of('/v1/api-keys/%<key_id>s', key_id:))
  end

  class User
    def initialize(http) = @http = http

    # The account, its plan, storage use and limits, and the calling key.
    def info = @http.data(:get, '/v1/user/info')
  end

  # The tail of the event feed: every event from a cursor on, as they happen (long polls of `wait` seconds); iterating
  # never ends by itself. `cursor` is where to resume: after the last event handed out when the loop stopped at the
  # last event of a batch (as a long poll's single event usually is), else at the start of the batch it left.
  class EventTail
    include Enumerable

    attr_reader :cursor

    def initialize(events, after:, types:, limit:, wait:)
      @events = events
      @cursor = after
      @query = { types: types, limit: limit, wait: wait }
    end

    def each
      return enum_for(:each) unless block_given?

      loop do
        batch = @events.list(after: @cursor, **@query)
        last = batch['data'].size - 1
        @cursor = batch['next_cursor'] if last.negative?
        batch['data'].each_with_index do |event, index|
          # Moved before the batch's last event is handed out, so a loop that stops at it resumes after it.
          @cursor = batch['next_cursor'] if index == last
          yield event
        end
      end
    end
  end

  # The account's event feed: every change, oldest first, from a cursor (GET /v1/events).
  class Events
    def initialize(http) = @http = http

    # One batch: { 'data' => [events], 'next_cursor' => cursor }. after:, limit:, types: (Array or String),
    # wait: seconds to hold the request open until an event arrives (0..30).
    def list(after: nil, limit: nil, types: nil, wait: nil)
      types = types.join(',') if types.is_a?(Array)
      @http.envelope(:get, '/v1/events', query: { after: after, limit: limit, types: types, wait: wait })
    end

    # Every event from `after` on, tailing the feed with long polls, in batches of up to `limit` events (the server's
    # default: 100); never ends unless `stop_when_idle: true`, in which case it stops at the first empty batch. Yields
    # each event; answers the cursor to continue from.
    def each(after: nil, types: nil, limit: nil, wait: 30, stop_when_idle: false)
      unless block_given?
        return enum_for(:each, after: after, types: types, limit: limit, wait: wait, stop_when_idle: stop_when_idle)
      end

      cursor = after
      loop do
        batch = list(after: cursor, types: types, limit: limit, wait: stop_when_idle ? 0 : wait)
        batch['data'].each { |event| yield event }
        cursor = batch['next_cursor']
        return cursor if stop_when_idle && batch['data'].empty?
      end
    end

    # Every event from `after` on, as they happen, with the cursor to resume from when the loop stops (EventTail):
    # `tail = client.events.tail(after: saved); tail.each { |event| ...; break if done }; saved = tail.cursor`.
    def tail(after: nil, types: nil, limit: nil, wait: 30) = EventTail.new(self, after:, types:, limit:, wait:)
  end
end
