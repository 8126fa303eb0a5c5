# frozen_string_literal: true

require 'socket'
require 'uri'

# The TCP proxy every test of this library puts between the client and a server, to be the network or the
# middlebox in the way. Each connection carries one request (the library opens one per request): the proxy reads its
# head, records it (`requests`), then relays both ways. What it does to the requests whose request line matches:
#
# - `cut`: lets `after` more bytes (heads included, counted across connections) go to the server (`of: :request`) or
#   to the client (`of: :answer`), then closes that connection on both sides: with a reset (`how: :reset`, a
#   dropped network: the client's read fails) or an orderly close (`how: :close`, a peer that gave up: the client
#   only sees the body end early), once `on_cut` has run. Once only; `cuts` counts them.
# - `answer`: answers them itself with a canned answer, as a captive portal or a proxy's error page does.
# - `ignore_ranges`: takes the Range and If-Range headers out of them, as a proxy or cache that does not do ranges:
#   the server answers 200 with the whole file.
#
# With `prefix:` it serves the server under that path, as a reverse proxy mounting it there does: `url` ends with
# the prefix, which is taken off the request target on the way in, and a request outside it is answered 404.
class TestProxy
  Cut = Struct.new(:of, :matching, :left, :how, :on_cut)
  NOT_FOUND = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 22\r\nConnection: close\r\n\r\n" \
              'Not under this prefix.'

  attr_reader :url, :requests, :cuts

  # An HTTP/1.1 answer to give with `answer`.
  def self.http_answer(status, headers, body = '')
    head = headers.merge('Content-Length' => body.bytesize, 'Connection' => 'close').map { |name, value| "#{name}: #{value}\r\n" }
    "HTTP/1.1 #{status}\r\n#{head.join}\r\n#{body}"
  end

  def initialize(upstream_url, prefix: nil)
    upstream = URI(upstream_url)
    @upstream = [upstream.host, upstream.port]
    @prefix = prefix
    @requests = []
    @cuts = 0
    @cut = nil
    @answers = []
    @rangeless = nil
    @lock = Mutex.new
    @listener = TCPServer.new('127.0.0.1', 0)
    @url = "http://127.0.0.1:#{@listener.addr[1]}#{prefix}"
    @thread = Thread.new do
      loop { Thread.new(@listener.accept) { |client| relay(client) } }
    rescue IOError, SystemCallError
      nil
    end
  end

  def cut(after:, of: :answer, matching: //, how: :close, on_cut: nil)
    @lock.synchronize { @cut = Cut.new(of, matching, after, how, on_cut) }
    self
  end

  def ignore_ranges(matching: //)
    @lock.synchronize { @rangeless = matching }
    self
  end

  def answer(matching, with:)
    @lock.synchronize { @answers << [matching, with] }
    self
  end

  # The heads of the requests seen whose request line matches.
  def requests_matching(pattern) = @lock.synchronize { @requests.select { |head| head[/\A[^\r\n]*/].match?(pattern) } }

  def close
    @thread.kill
    @listener.close
  end

  private

  def relay(client)
    head = +''.b
    head << client.readpartial(65_536) until head.include?("\r\n\r\n")
    line = head[/\A[^\r\n]*/]
    canned = @lock.synchronize do
      @requests << head.byteslice(0, head.index("\r\n\r\n") + 4)
      head = head.gsub(/^(?:range|if-range):[^\r\n]*\r\n/i, '') if @rangeless && line.match?(@rangeless)
      @answers.find { |matching, _| line.match?(matching) }&.last
    end
    head, canned = unprefixed(head, line, canned) if @prefix
    return answer_with(client, head, canned) if canned

    server = TCPSocket.new(*@upstream)
    return if forward(server, head, :request, line)

    Thread.new { pump(client, server, :request, line) }
    pump(server, client, :answer, line)
  rescue IOError, SystemCallError
    nil
  ensure
    [client, server].each { |socket| socket.close if socket && !socket.closed? }
  end

  # The head with the prefix taken off its request target; NOT_FOUND for a request outside the prefix.
  def unprefixed(head, line, canned)
    verb, target, version = line.split(' ', 3)
    inside = target == @prefix || target.start_with?("#{@prefix}/", "#{@prefix}?")
    return [head, canned || NOT_FOUND] unless inside

    inner = target.delete_prefix(@prefix)
    inner = "/#{inner}" unless inner.start_with?('/')
    ["#{verb} #{inner} #{version}#{head.byteslice(line.bytesize..)}".b, canned]
  end

  # Answers without the server, once the request's body (if any, by Content-Length) has arrived.
  def answer_with(client, head, canned)
    length = head[/^content-length: *(\d+)/i, 1].to_i
    received = head.bytesize - (head.index("\r\n\r\n") + 4)
    received += client.readpartial(65_536).bytesize while received < length
    client.write(canned)
  end

  def pump(source, target, direction, line)
    loop { break if forward(target, source.readpartial(65_536), direction, line) }
  rescue IOError, SystemCallError
    nil
  ensure
    [source, target].each { |socket| socket.close unless socket.closed? }
  end

  # Writes what passes of `bytes` to `target`; true when the connection was cut there.
  def forward(target, bytes, direction, line)
    cut = nil
    passed = @lock.synchronize do
      if @cut && @cut.of == direction && line.match?(@cut.matching)
        if bytes.bytesize < @cut.left
          @cut.left -= bytes.bytesize
        else
          cut = @cut
          @cut = nil
          @cuts += 1
        end
      end
      cut ? cut.left : bytes.bytesize
    end
    target.write(bytes.byteslice(0, passed))
    return false unless cut

    cut.on_cut&.call
    target.setsockopt(Socket::SOL_SOCKET, Socket::SO_LINGER, [1, 0].pack('ii')) if cut.how == :reset
    target.close
    true
  end
end
