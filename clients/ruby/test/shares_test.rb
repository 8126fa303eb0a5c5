# frozen_string_literal: true

# Share links read back by id, against the live server named by FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY: the
# link as listings show it, with its status, revoked links too, and NotFoundError for an id the account has no link by.
require 'minitest/autorun'
require 'stringio'
require 'file_storage'

class SharesTest < Minitest::Test
  def client = @client ||= FileStorage::Client.new(api_key: ENV.fetch('FILE_STORAGE_API_KEY'), base_url: ENV.fetch('FILE_STORAGE_BASE_URL'))

  def test_get_answers_a_link_with_its_status_revoked_or_not
    file = client.files.upload(StringIO.new('shared by id'), name: 'by-id.txt')
    share = client.shares.create(file_id: file['id'], password: 'open sesame')
    fetched = client.shares.get(share['id'])
    assert_equal [share['id'], share['url'], file['id'], true, true, nil],
                 fetched.values_at('id', 'url', 'file_id', 'password_protected', 'active', 'revoked_at')
    assert_equal client.shares.list(file_id: file['id']).data.first, fetched

    revoked = client.shares.revoke(share['id'])
    assert_equal [share['id'], false, revoked['revoked_at']], client.shares.get(share['id']).values_at('id', 'active', 'revoked_at')
  end

  def test_get_of_an_unknown_id_raises_not_found
    error = assert_raises(FileStorage::NotFoundError) { client.shares.get('shr_00000000000000000000000000000000') }
    assert_equal [404, 'not_found'], [error.status, error.code]
  end
end
