# frozen_string_literal: true

# Ids that cannot name a resource are refused before any request; share tokens, which may be anything a visitor
# pasted, are sent percent-encoded. Against the live server named by FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY,
# through a proxy that records every request.
require 'minitest/autorun'
require 'stringio'
require 'file_storage'
require_relative 'test_proxy'

class IdsTest < Minitest::Test
  # Each would end in another route (the listing for '', the parent for '..'), or a path a proxy rewrites.
  BAD_IDS = ['', '.', '..', 'a/b', 'file?x=1', 'file#top'].freeze

  CALLS = {
    'files.get' => ->(client, id) { client.files.get(id) },
    'files.update' => ->(client, id) { client.files.update(id, name: 'renamed.txt') },
    'files.delete' => ->(client, id) { client.files.delete(id) },
    'files.restore' => ->(client, id) { client.files.restore(id) },
    'files.download' => ->(client, id) { client.files.download(id, StringIO.new) },
    'files.thumbnail' => ->(client, id) { client.files.thumbnail(id, StringIO.new) },
    'folders.get' => ->(client, id) { client.folders.get(id) },
    'folders.update' => ->(client, id) { client.folders.update(id, name: 'Renamed') },
    'folders.delete' => ->(client, id) { client.folders.delete(id) },
    'shares.get' => ->(client, id) { client.shares.get(id) },
    'shares.revoke' => ->(client, id) { client.shares.revoke(id) },
    'webhooks.get' => ->(client, id) { client.webhooks.get(id) },
    'webhooks.update' => ->(client, id) { client.webhooks.update(id, active: false) },
    'webhooks.delete' => ->(client, id) { client.webhooks.delete(id) },
    'webhooks.test' => ->(client, id) { client.webhooks.test(id) },
    'webhooks.rotate_secret' => ->(client, id) { client.webhooks.rotate_secret(id) },
    'webhooks.replay' => ->(client, id) { client.webhooks.replay(id, since: '2026-01-01T00:00:00.000Z') },
    'webhooks.deliveries' => ->(client, id) { client.webhooks.deliveries(id) },
    'webhooks.each_delivery' => ->(client, id) { client.webhooks.each_delivery(id).to_a },
    'webhooks.delivery (webhook)' => ->(client, id) { client.webhooks.delivery(id, 'dlv_0') },
    'webhooks.delivery (delivery)' => ->(client, id) { client.webhooks.delivery('wh_0', id) },
    'webhooks.redeliver (webhook)' => ->(client, id) { client.webhooks.redeliver(id, 'dlv_0') },
    'webhooks.redeliver (delivery)' => ->(client, id) { client.webhooks.redeliver('wh_0', id) },
    'api_keys.revoke' => ->(client, id) { client.api_keys.revoke(id) }
  }.freeze

  def setup
    @proxy = TestProxy.new(ENV.fetch('FILE_STORAGE_BASE_URL'))
    @client = FileStorage::Client.new(api_key: ENV.fetch('FILE_STORAGE_API_KEY'), base_url: @proxy.url)
  end

  def teardown = @proxy.close

  def request_lines = @proxy.requests.map { |head| head[/\A[^\r\n]*/].sub(%r{ HTTP/1\.1\z}, '') }

  def test_an_id_that_cannot_name_a_resource_raises_invalid_request_error_before_any_request
    CALLS.each do |call, send|
      BAD_IDS.each do |bad|
        error = assert_raises(FileStorage::InvalidRequestError, "#{call}(#{bad.inspect})") { send.call(@client, bad) }
        assert_equal ['invalid_request', nil], [error.code, error.status], "#{call}(#{bad.inspect})"
        assert_match(/\A(file|folder|share|webhook|delivery|key)_id\z/, error.details['fields'].first['field'])
      end
    end
    assert_equal [], request_lines
  end

  def test_a_share_token_is_sent_percent_encoded_and_an_unknown_one_is_not_found
    { '.' => '%2E', '..' => '%2E%2E', 'a/b?c#d' => 'a%2Fb%3Fc%23d' }.each do |token, sent|
      assert_raises(FileStorage::NotFoundError) { @client.shares.open(token) }
      assert_raises(FileStorage::NotFoundError) { @client.shares.download(token, StringIO.new) }
      assert_equal ["GET /s/#{sent}", "GET /s/#{sent}/download"], request_lines.last(2)
    end
  end

  def test_an_empty_share_token_is_refused_before_any_request
    ['', 'https://files.example.com/'].each do |url_or_token|
      assert_raises(FileStorage::InvalidRequestError) { @client.shares.open(url_or_token) }
      assert_raises(FileStorage::InvalidRequestError) { @client.shares.download(url_or_token, StringIO.new) }
    end
    assert_equal [], request_lines
  end
end
