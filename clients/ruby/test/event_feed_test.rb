# frozen_string_literal: true

# Reading the event feed, against the live server named by FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY.
require 'minitest/autorun'
require 'securerandom'
require 'file_storage'
require_relative 'test_proxy'

class EventFeedTest < Minitest::Test
  def client(base_url = ENV.fetch('FILE_STORAGE_BASE_URL'))
    FileStorage::Client.new(api_key: ENV.fetch('FILE_STORAGE_API_KEY'), base_url: base_url)
  end

  def test_each_reads_the_feed_in_batches_of_limit_events_as_the_other_libraries_can
    cursor = client.events.each(stop_when_idle: true) { |_event| nil } # the end of the feed
    names = Array.new(3) { |i| client.folders.create(name: "batch #{i} #{SecureRandom.hex(4)}")['name'] }
    # The feed shows an event once it is stamped, a moment after its request.
    deadline = Time.now + 20
    sleep 0.2 until client.events.each(after: cursor, types: ['folder.created'], stop_when_idle: true).count >= 3 ||
                    Time.now > deadline
    proxy = TestProxy.new(ENV.fetch('FILE_STORAGE_BASE_URL'))
    seen = []
    client(proxy.url).events.each(after: cursor, types: ['folder.created'], limit: 1, stop_when_idle: true) do |event|
      seen << event['data']['folder']['name']
    end
    assert_equal names, seen
    assert_equal 4, proxy.requests_matching(%r{\AGET /v1/events\?\S*limit=1\b}).size, 'one event per batch, then an empty one'
  ensure
    proxy&.close
  end

  def test_a_tail_left_at_an_event_resumes_after_it_without_repeating_it
    cursor = client.events.each(stop_when_idle: true) { |_event| nil } # the end of the feed
    folder = client.folders.create(name: "left at #{SecureRandom.hex(4)}")
    tail = client.events.tail(after: cursor, types: ['folder.created'], wait: 20)
    # A tail never ends by itself: a program stops at an event, keeps tail.cursor, and resumes from it later.
    tail.each { |event| break if event['data']['folder']['id'] == folder['id'] }
    resumed = []
    client.events.each(after: tail.cursor, types: ['folder.created'], stop_when_idle: true) { |event| resumed << event }
    refute_includes resumed.map { |event| event['data']['folder']['id'] }, folder['id']
  end
end
