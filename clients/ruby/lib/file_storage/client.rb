# frozen_string_literal: true

module FileStorage
  MIB = 1024 * 1024

  # The File Storage Service API: one object per account key, every resource hanging off it.
  #
  #   client = FileStorage::Client.new(api_key: ENV['FILE_STORAGE_API_KEY'], base_url: 'https://files.example.com')
  #   file = client.files.upload('report.pdf')
  class Client
    attr_reader :files, :trash, :folders, :shares, :webhooks, :api_keys, :user, :events

    # base_url: where the server answers, with its path when a reverse proxy mounts it under one; timeout: seconds
    # per attempt (default 60); max_retries: after 429, 502, 503, 504 and network errors (default 2; 0 turns every
    # retry off, waiting for a running Idempotency-Key included, but a resumable upload still waits for its lock);
    # files of at least resumable_threshold bytes (default 64 MiB) go through the resumable tus endpoint in chunks of
    # resumable_chunk bytes (default 8 MiB), which keeps trying for up to 80 s without progress (Tus::PATIENCE).
    def initialize(api_key:, base_url:, timeout: 60, max_retries: 2, resumable_threshold: 64 * MIB,
                   resumable_chunk: 8 * MIB)
      http = HttpClient.new(api_key: api_key, base_url: base_url, timeout: timeout, max_retries: max_retries)
      @files = Files.new(http, resumable_threshold: resumable_threshold, resumable_chunk: resumable_chunk)
      @trash = Trash.new(http)
      @folders = Folders.new(http)
      @shares = Shares.new(http)
      @webhooks = Webhooks.new(http)
      @api_keys = ApiKeys.new(http)
      @user = User.new(http)
      @events = Events.new(http)
    end
  end
end
