# frozen_string_literal: true

# The conformance scenario of clients/conformance/scenario.json, run with this library against a live server.
# The harness (clients/conformance/conformance.e2e-spec.ts) sets FSS_BASE_URL, FSS_API_KEY, FSS_FREE_API_KEY,
# FSS_SCENARIO, FSS_REPORT, FSS_WORK_DIR and FSS_PAST_LINK_EXPIRY_URL (see clients/conformance/scenario.md). Each step runs in the scenario's
# order; its outcome goes into the report the harness reads. Exits non-zero when a step failed.
require 'digest'
require 'json'
require 'socket'
require 'file_storage'
require_relative 'test_proxy'

ENV_ = ENV
MIB = 1024 * 1024

class StepSkipped < StandardError; end

def check(condition, message)
  raise "check failed: #{message}" unless condition
end

def check_equal(expected, actual, what)
  raise "check failed: #{what}: expected #{expected.inspect}, got #{actual.inspect}" unless expected == actual
end

def write_random_file(path, size)
  digest = Digest::MD5.new
  File.open(path, 'wb') do |out|
    left = size
    while left.positive?
      chunk = Random.bytes([left, MIB].min)
      digest << chunk
      out.write(chunk)
      left -= chunk.bytesize
    end
  end
  digest.hexdigest
end

# A real HTTP server on 127.0.0.1 that records every POST it gets and answers 200.
class WebhookReceiver
  attr_reader :url

  def initialize
    @server = TCPServer.new('127.0.0.1', 0)
    @url = "http://127.0.0.1:#{@server.addr[1]}/hooks"
    @received = Queue.new
    @thread = Thread.new { loop { Thread.new(@server.accept) { |socket| serve(socket) } } }
  end

  # The first delivery of `event` (its X-Service-Event header): [headers, raw body].
  def wait_for(event, timeout = 30)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      raise "no #{event} delivery within #{timeout} s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      # Queue#pop(timeout:) needs Ruby 3.2; this library supports 3.1.
      if @received.empty?
        sleep(0.05)
        next
      end
      headers, body = @received.pop
      return [headers, body] if headers.find { |key, _| key.casecmp?('x-service-event') }&.last == event
    end
  end

  def close
    @thread.kill
    @server.close
  end

  private

  def serve(socket)
    head = +''
    head << socket.readpartial(16_384) until head.include?("\r\n\r\n")
    header_text, body = head.split("\r\n\r\n", 2)
    headers = header_text.split("\r\n").drop(1).to_h { |line| line.split(':', 2).map(&:strip) }
    length = headers.find { |key, _| key.casecmp?('content-length') }&.last.to_i
    body << socket.readpartial(length - body.bytesize) while body.bytesize < length
    @received << [headers, body]
    socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
  rescue StandardError
    nil
  ensure
    socket.close
  end
end

scenario = JSON.parse(File.read(ENV_.fetch('FSS_SCENARIO')))['steps'].to_h { |entry| [entry['id'], entry] }
params = ->(id) { scenario.fetch(id).fetch('params', {}) }
base_url = ENV_.fetch('FSS_BASE_URL')
work_dir = ENV_.fetch('FSS_WORK_DIR')
client = FileStorage::Client.new(api_key: ENV_.fetch('FSS_API_KEY'), base_url: base_url)
state = {}
upload_small = lambda do |name|
  client.files.upload(StringIO.new(name * 3), name: name, folder_id: state[:folder]['id'])
end

steps = {}

steps['create_folder'] = lambda do
  name = params.('create_folder')['folder_name']
  folder = client.folders.create(name: name)
  check(folder['id'].start_with?('fld_'), 'an fld_ id')
  check_equal([name, nil], [folder['name'], folder['parent_id']], 'name and parent')
  state[:folder] = folder
end

steps['upload_streamed'] = lambda do
  p = params.('upload_streamed')
  path = File.join(work_dir, p['file_name'])
  local_md5 = write_random_file(path, p['size_bytes'])
  progress = []
  uploaded = client.files.upload(path, folder_id: state[:folder]['id'], on_progress: ->(sent, _) { progress << sent })
  check_equal([p['file_name'], p['size_bytes'], local_md5], uploaded.values_at('name', 'size', 'md5_hash'), 'the stored file')
  check_equal(p['size_bytes'], progress.last, 'the last progress report')
  state.merge!(big_file: uploaded, big_path: path, big_md5: local_md5)
end

steps['list_paginated'] = lambda do
  p = params.('list_paginated')
  state[:small] = p['extra_files'].to_h { |name| [name, upload_small.(name)] }
  query = { folder_id: state[:folder]['id'], search: p['search'], sort: p['sort'], per_page: p['per_page'] }
  check(client.files.list(**query).pagination['total_pages'] > 1, 'more than one page')
  check_equal(%w[conformance-a.txt conformance-b.txt conformance.bin], client.files.each(**query).map { |f| f['name'] }, 'iterated names')
end

steps['download_compare'] = lambda do
  big = state[:big_file]
  target = File.join(work_dir, 'downloaded.bin')
  client.files.download(big['id'], target)
  check_equal(File.size(state[:big_path]), File.size(target), 'downloaded size')
  check_equal(state[:big_md5], Digest::MD5.file(target).hexdigest, 'downloaded MD5')
  digest = Digest::MD5.new
  client.files.download(big['id']) { |chunk| digest << chunk }
  check_equal(state[:big_md5], digest.hexdigest, 'streamed MD5')
end

steps['share_password'] = lambda do
  password = params.('share_password')['password']
  share = client.shares.create(file_id: state[:small]['conformance-a.txt']['id'], password: password)
  check(share['password_protected'], 'password_protected')
  begin
    client.shares.open(share['url'])
    raise 'check failed: opened without the password'
  rescue FileStorage::PasswordRequiredError => e
    check_equal([401, 'password_required'], [e.status, e.code], 'the refusal')
  end
  check_equal('conformance-a.txt', client.shares.open(share['url'], password: password)['file']['name'], 'the shared file')
  content = StringIO.new
  client.shares.download(share['url'], content, password: password)
  check_equal('conformance-a.txt' * 3, content.string, 'the shared bytes')
end

steps['trash_restore'] = lambda do
  folder_id = state[:folder]['id']
  victim = state[:small]['conformance-a.txt']
  deleted = client.files.delete(victim['id'])
  check(deleted['id'] == victim['id'] && deleted['recoverable_until'], 'the trashed file')
  check(client.trash.each.any? { |item| item['id'] == victim['id'] }, 'listed in the trash')
  check(client.files.each(folder_id: folder_id).none? { |f| f['id'] == victim['id'] }, 'gone from its folder')
  restored = client.files.restore(victim['id'])
  check_equal([victim['id'], folder_id], restored.values_at('id', 'folder_id'), 'the restored file')
  check(client.files.each(folder_id: folder_id).any? { |f| f['id'] == victim['id'] }, 'back in its folder')
end

steps['bulk_delete'] = lambda do
  ids = [state[:small]['conformance-b.txt']['id'], state[:small]['other.txt']['id']]
  result = client.files.bulk_delete(ids + ['file_doesnotexist'])
  check_equal(ids, result['deleted'], 'deleted')
  check_equal([3, 2, 1], result.values_at('total', 'deleted_count', 'failed_count'), 'counts')
  check_equal(%w[file_doesnotexist not_found], [result['failed'][0]['id'], result['failed'][0]['error']['code']], 'the failure')
end

steps['webhook_signature'] = lambda do
  p = params.('webhook_signature')
  receiver = WebhookReceiver.new
  begin
    webhook = client.webhooks.create(url: receiver.url, events: p['events'], secret: p['secret'])
    probe = upload_small.('webhook-probe.txt')
    headers, body = receiver.wait_for('file.uploaded')
    check(FileStorage::Webhook.verify(body, headers, p['secret']), 'the signature verifies')
    check(!FileStorage::Webhook.verify(body, headers, 'another-secret'), 'not with another secret')
    check(!FileStorage::Webhook.verify("#{body} ", headers, p['secret']), 'not for an altered body')
    parsed = JSON.parse(body)
    check_equal(['file.uploaded', webhook['id'], probe['id']], [parsed['event'], parsed['webhook_id'], parsed['data']['file']['id']], 'the delivery')
    client.webhooks.delete(webhook['id'])
  ensure
    receiver.close
  end
end

steps['event_feed'] = lambda do
  begin
    client.events.list(limit: 1)
  rescue FileStorage::NotFoundError => e
    # The one step a server may not support yet: the harness accepts the skip only when the route is missing.
    raise StepSkipped, "GET /v1/events is not on this server (#{e.status} #{e.code}): the event feed cannot be read"
  end
  wanted = [['folder.created', 'folder', state[:folder]['id']], ['file.uploaded', 'file', state[:big_file]['id']]]
  seen = {}
  found = []
  cursor = nil
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
  until (wanted - found).empty?
    cursor = client.events.each(after: cursor, stop_when_idle: true) do |event|
      check_equal(%w[data event id timestamp], event.keys.sort, 'the event fields')
      check(!seen.key?(event['id']), 'an event was read twice')
      seen[event['id']] = true
      wanted.each { |name, key, id| found << [name, key, id] if event['event'] == name && event['data'].dig(key, 'id') == id }
    end
    check(Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline, "the feed did not show #{wanted - found} within 30 s") unless (wanted - found).empty?
    sleep(0.2) unless (wanted - found).empty?
  end
  again = client.events.list(after: cursor)
  check(again['data'].none? { |event| seen.key?(event['id']) }, 'reading on from next_cursor repeated events')
end

steps['rate_limit_retry'] = lambda do
  now = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
  strict = FileStorage::Client.new(api_key: ENV_.fetch('FSS_FREE_API_KEY'), base_url: base_url, max_retries: 0)
  refused = nil
  refused_at = 0.0
  # A window about to reset leaves no time to be sure the next request is refused too: wait for the next one.
  3.times do
    refused = nil
    500.times do
      strict.user.info
    rescue FileStorage::RateLimitError => e
      refused = e
      refused_at = now.call
      break
    end
    check(refused, '500 requests of a Free account were never refused')
    break if refused.retry_after.to_f >= 3

    sleep(refused.retry_after || 1)
  end
  check_equal([429, 'rate_limit_exceeded'], [refused.status, refused.code], 'the refusal')
  retry_after = refused.retry_after.to_f
  check(retry_after >= 3, "retry_after of at least 3 s in one of three windows (last: #{retry_after})")
  retrying = FileStorage::Client.new(api_key: ENV_.fetch('FSS_FREE_API_KEY'), base_url: base_url, max_retries: 3)
  sent_at = now.call
  folder = retrying.folders.create(name: 'After the limit')
  done_at = now.call
  # Sent while the window that refused was still open, the first attempt was refused too; it succeeded only by
  # waiting for that window to end.
  check(sent_at - refused_at < retry_after - 1, 'the create was sent while the account was still limited')
  check(done_at - refused_at >= retry_after - 1,
        format('the create waited for the window to end (%.1f s of %d)', done_at - refused_at, retry_after))
  check_equal([folder['id']], retrying.folders.each.map { |f| f['id'] }, 'the folder exists once')
end

steps['resume_upload'] = lambda do
  p = params.('resume_upload')
  size = p['size_bytes']
  chunk = p['chunk_bytes']
  path = File.join(work_dir, 'resumable.bin')
  local_md5 = write_random_file(path, size)
  proxy = TestProxy.new(base_url)
  begin
    through_proxy = FileStorage::Client.new(api_key: ENV_.fetch('FSS_API_KEY'), base_url: proxy.url, max_retries: 0,
                                            resumable_chunk: chunk)
    location = through_proxy.files.start_resumable_upload(path, folder_id: state[:folder]['id'])
    # The first PATCH (chunk and headers) passes, the second is cut mid-way.
    proxy.cut(after: chunk + (chunk / 2) + 2048, of: :request, matching: /\APATCH /)
    begin
      through_proxy.files.resume_upload(location, path)
      raise 'check failed: the cut upload did not fail'
    rescue FileStorage::ConnectionError
      nil
    end
    check_equal(1, proxy.cuts, 'cuts')
  ensure
    proxy.close
  end
  resumer = FileStorage::Client.new(api_key: ENV_.fetch('FSS_API_KEY'), base_url: base_url, resumable_chunk: chunk)
  offset, = FileStorage::Tus.where(resumer.files.instance_variable_get(:@http), location)
  check(offset >= chunk && offset < size, "the server kept #{offset} bytes")
  file = resumer.files.resume_upload(location, path)
  check_equal(['resumable.bin', size, local_md5, state[:folder]['id']], file.values_at('name', 'size', 'md5_hash', 'folder_id'), 'the resumed file')
end

steps['resume_download'] = lambda do
  first_bytes = params.('resume_download')['first_bytes']
  big = state[:big_file]
  target = File.join(work_dir, 'resumed-download.bin')
  client.files.download(big['id'], target, range: 0...first_bytes)
  check_equal(Digest::MD5.hexdigest(File.binread(state[:big_path], first_bytes)), Digest::MD5.file(target).hexdigest, 'the first bytes')
  proxy = TestProxy.new(base_url).ignore_ranges(matching: %r{/download\?})
  begin
    through_proxy = FileStorage::Client.new(api_key: ENV_.fetch('FSS_API_KEY'), base_url: proxy.url)
    File.open(target, 'ab') { |rest| through_proxy.files.download(big['id'], rest, range: File.size(target)..) }
    check_equal(1, proxy.requests_matching(%r{/download\?}).size, 'downloads through the proxy')
  ensure
    proxy.close
  end
  check_equal([big['size'], state[:big_md5]], [File.size(target), Digest::MD5.file(target).hexdigest], 'the resumed download')
end

steps['download_past_link_expiry'] = lambda do
  big = state[:big_file]
  target = File.join(work_dir, 'past-link-expiry.bin')
  past_expiry = FileStorage::Client.new(api_key: ENV_.fetch('FSS_API_KEY'), base_url: ENV_.fetch('FSS_PAST_LINK_EXPIRY_URL'))
  past_expiry.files.download(big['id'], target)
  check_equal([big['size'], state[:big_md5]], [File.size(target), Digest::MD5.file(target).hexdigest], 'the continued download')
end

check_equal(scenario.keys, steps.keys, "the runner's steps")
results = steps.map do |id, body|
  body.call
  puts "ok #{id}"
  { id: id, status: 'passed' }
rescue StepSkipped => e
  puts "skipped #{id}: #{e.message}"
  { id: id, status: 'skipped', reason: e.message }
rescue StandardError, ScriptError => e
  puts "FAILED #{id}: #{e.class}: #{e.message}\n  #{e.backtrace.first(8).join("\n  ")}"
  { id: id, status: 'failed', error: "#{e.class}: #{e.message}\n#{e.backtrace.first(8).join("\n")}" }
ensure
  $stdout.flush
end
File.write(ENV_.fetch('FSS_REPORT'), JSON.pretty_generate({ language: 'ruby', steps: results }))
exit(results.any? { |result| result[:status] == 'failed' } ? 1 : 0)
