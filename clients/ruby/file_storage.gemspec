# frozen_string_literal: true

require_relative 'lib/file_storage/version'

Gem::Specification.new do |spec|
  spec.name = 'file_storage'
  spec.version = FileStorage::VERSION
  spec.summary = 'Ruby client for the File Storage Service REST API'
  spec.description = 'Uploads (streamed, resumable over tus), listing, downloads, trash, folders, shares, ' \
                     'webhooks, API keys and the event feed of a File Storage Service, with typed errors, ' \
                     'retries and webhook signature verification. Standard library only.'
  spec.license = 'MIT'
  spec.authors = ['File Storage Service']
  spec.required_ruby_version = '>= 3.1'
  spec.files = Dir['lib/**/*.rb'] + ['README.md']
  spec.require_paths = ['lib']
  spec.metadata['rubygems_mfa_required'] = 'true'
end
