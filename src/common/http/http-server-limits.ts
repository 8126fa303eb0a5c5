import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { finished, type Duplex } from 'node:stream';
import type { AppConfig } from '../../config/app-config.js';
import type { ErrorEnvelope } from './envelope.js';

/**
 * Time limits of the HTTP server, how it closes a connection whose request was answered before its body arrived
 * (closeAfterAnswer, dropRestOfBody), and the answers Node's HTTP layer gives on its own, in our envelope.
 *
 * Node's default `requestTimeout` (300 s) cuts off any request body that takes longer in total, so a 5 GB
 * upload would need 17 MB/s. Instead a connection is closed only when it goes idle: no bytes in either
 * direction for `httpIdleTimeoutMs`. A slow upload or download that keeps moving runs as long as it needs.
 * The request head still has its own deadline (`httpHeadersTimeoutMs`) against clients that trickle headers.
 */
export function applyHttpServerLimits(server: Server, config: AppConfig): void {
  server.requestTimeout = 0;
  server.headersTimeout = config.httpHeadersTimeoutMs;
  server.setTimeout(config.httpIdleTimeoutMs, (socket) => closeIdle(socket));
  // One idle limit, between requests too: Node's own 5 s for a kept-alive connection is shorter than the idle timeout of
  // the proxies in front of it (nginx and AWS ALB keep theirs 60 s), which then send a request on a connection Node is
  // closing and answer their client 502; a client that missed its own 4 s timer (a busy event loop) fails the same way.
  // The answers' `Keep-Alive: timeout=` tells clients how long it is.
  server.keepAliveTimeout = config.httpIdleTimeoutMs;
  const requestsOf = new WeakMap<Duplex, IncomingMessage>();
  const unstarted = closeUnstartedConnectionsOnClose(server);
  // Once the server is closing (SIGTERM, app.close()), a connection closes as soon as it has no request in flight:
  // Node closes the idle ones only when close() is called, and one whose request ends later would hold the close up
  // for the idle limit. Answers not yet begun say so (`Connection: close`).
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    requestsOf.set(request.socket, request);
    unstarted.delete(request.socket);
    if (!server.listening && !response.headersSent) response.setHeader('Connection', 'close');
    response.once('finish', () => {
      // On a connection that stays open, Node reads the rest of an answered request's body for as long as it comes:
      // endless, behind a 401, if the client sends it chunked. A connection that closes is handled by closeAfterAnswer.
      if (!request.complete && !request.socket.writableEnded) dropRestOfBody(request, config.httpLingerMs);
      // Node lets go of the connection just after 'finish'.
      if (!server.listening) setImmediate(() => server.closeIdleConnections());
    });
  });
  // Without this listener Node answers `Expect: 100-continue` with 100 at once, asking for a body it may refuse.
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    continueWhenBodyIsRead(request, response);
    server.emit('request', request, response);
  });
  // Node closes the connection of a `Connection: close` answer through destroySoon, which destroys the socket as soon
  // as the answer is written, whatever of the request is still unread.
  server.on('connection', (socket: Socket) => {
    socket.destroySoon = () => closeAfterAnswer(socket, requestsOf.get(socket), config.httpLingerMs);
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const [status, message] = describeClientError(error.code);
    answerAndClose(socket, status, message);
  });
}

/**
 * Connections that have not begun a request (a browser's preconnect, a load balancer's warm pool) are closed when the
 * server closes. Node's close() leaves them open, as not idle, and stops the check of their header deadline with it,
 * so one such connection held a shutdown up for the idle limit (60 s), past the 30 s grace period. One still sending
 * its request head is closed too: nothing of its request has been acted on, so the client can send it elsewhere.
 * Answers the set, from which the 'request' listener removes a connection once its first request has arrived.
 */
function closeUnstartedConnectionsOnClose(server: Server): Set<Duplex> {
  const unstarted = new Set<Duplex>();
  server.on('connection', (socket: Socket) => {
    unstarted.add(socket);
    socket.once('close', () => unstarted.delete(socket));
  });
  const close = server.close;
  server.close = function closeWithUnstartedConnections(this: Server, ...args: Parameters<Server['close']>) {
    for (const socket of unstarted) socket.destroy();
    return close.apply(this, args);
  };
  return unstarted;
}

function describeClientError(code: string | undefined): [number, string] {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'The request took too long to arrive.'];
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'The request headers are too large.'];
    case 'HPE_URI_TOO_LONG':
      return [414, 'The request URL is too long.'];
    default:
      return [400, 'The request is not valid HTTP.'];
  }
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 414: 'URI Too Long', 431: 'Request Header Fields Too Large' };

/** The response a connection is busy with, if any (Node keeps it on the socket). */
type HttpSocket = Duplex & { _httpMessage?: { headersSent?: boolean } | null };

/** An idle connection: answered 408 while its request is still being read, otherwise simply closed. */
function closeIdle(socket: HttpSocket): void {
  const response = socket._httpMessage;
  // Between requests (keep-alive) nobody waits for an answer; mid-download the answer has begun and can only be cut.
  if (!response || response.headersSent) return void socket.destroy();
  answerAndClose(socket, 408, 'The connection was idle too long: no bytes moved.');
}

/**
 * Answers `Expect: 100-continue` with 100 only when the application starts reading the body (a 'data' or 'readable'
 * listener: every body parser, pipe and async iterator adds one). A request refused first (401, 413 on its
 * Content-Length, 429) gets its final answer instead, and the client never sends a body that would be dropped.
 */
function continueWhenBodyIsRead(request: IncomingMessage, response: ServerResponse): void {
  const onListener = (event: string | symbol) => {
    if (event !== 'data' && event !== 'readable') return;
    request.off('newListener', onListener);
    if (!response.headersSent && !response.writableEnded) response.writeContinue();
  };
  request.on('newListener', onListener);
}

/**
 * Closes a connection once its answer is written and its request's body has been read. Answered early (a 413 on
 * Content-Length, before a byte of the body), a client is still sending: a socket closed with unread bytes makes the
 * kernel reset the connection, and a client that has not read the answer yet, or reads only once it has sent
 * everything, sees ECONNRESET or EPIPE instead of the answer. So, as nginx's lingering close does, our side is ended
 * at once and the rest of the body is read and dropped, for HTTP_LINGER_SECONDS at most.
 */
function closeAfterAnswer(socket: Socket, request: IncomingMessage | undefined, lingerMs: number): void {
  if (socket.destroyed) return;
  socket.end();
  const closeOnceWritten = () => {
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  if (!request || request.complete) return closeOnceWritten();
  dropRestOfBody(request, lingerMs, closeOnceWritten);
}

/**
 * Reads and drops the rest of an answered request's body, then calls `then`; a body still arriving after `lingerMs`
 * (HTTP_LINGER_SECONDS) has its connection closed.
 */
function dropRestOfBody(request: IncomingMessage, lingerMs: number, then?: () => void): void {
  // The answer is final, so whatever was to read the body (a pipe left waiting) gets no more of it.
  request.unpipe();
  request.resume();
  const deadline = setTimeout(() => request.socket.destroy(), lingerMs).unref();
  finished(request, () => {
    clearTimeout(deadline);
    then?.();
  });
}

/** Writes a complete JSON error answer straight to the socket (Node has no response object here) and closes it. */
function answerAndClose(socket: Duplex, status: number, message: string): void {
  if (!socket.writable) return void socket.destroy();
  const body: ErrorEnvelope = { success: false, error: { code: 'invalid_request', message } };
  const json = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
  );
  // A client still sending would keep a half-closed socket open; it gets a moment to read the answer.
  setTimeout(() => socket.destroy(), 1000).unref();
}
