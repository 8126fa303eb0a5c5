# frozen_string_literal: true

require_relative 'file_storage/version'
require_relative 'file_storage/errors'
require_relative 'file_storage/http'
require_relative 'file_storage/upload_source'
require_relative 'file_storage/tus'
require_relative 'file_storage/page'
require_relative 'file_storage/resources'
require_relative 'file_storage/webhook_signature'
require_relative 'file_storage/client'

# The File Storage Service API client: `FileStorage::Client.new(api_key:, base_url:)`.
module FileStorage
end
