import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What a matching request gets instead of the server's answer, or how its answer ends early. */
interface AnswerRule {
  matching: RegExp;
  /** The proxy answers this itself, without reaching the server. */
  answer?: { status: number; headers?: Record<string, string>; body?: string };
  /** The server's answer ends after its head and this many bytes of its body; without it, nothing of it passes. */
  afterBodyBytes?: number;
  /** Where the answer ends, the connection is kept open and silent instead of being closed. */
  stall?: boolean;
  /** How many more matching requests the rule applies to; without it, all of them. */
  times?: number;
  /** Called as an answer is ended, before the client can see it: what happens meanwhile on the server's side. */
  onCut?: () => void;
}

/**
 * An HTTP proxy to the server on 127.0.0.1, for the tests of what a reverse proxy, a network or a middlebox does to the
 * client. With `prefix` (e.g. `/storage`) it serves the server under that path, as a reverse proxy mounting it there
 * does: the prefix is taken off the request path, and a request outside it is answered 404 by the proxy. `matching`
 * rules are tested on `METHOD /path?query`, the path without the prefix; the first that matches applies.
 */
export interface TestProxy {
  /** The proxy's address with its prefix: a client's baseUrl. */
  readonly url: string;
  /** The server's address; may be set after the proxy started (a server whose PUBLIC_BASE_URL is the proxy's). */
  upstream: string;
  /** Every request received, `METHOD /path?query` as the client sent it (with the prefix). */
  readonly requests: string[];
  /** How many answers `cutAnswers` ended early. */
  readonly answersCut: number;
  /** Answers matching requests itself: a captive portal's page, a 429 of its own. */
  answer(matching: RegExp, answer: { status: number; headers?: Record<string, string>; body?: string }): void;
  /**
   * Ends the answers to matching requests early: after the head and `afterBodyBytes` bytes of the body (without it,
   * before anything), closing the connection as a peer that went away does, or with `stall` keeping it open and silent;
   * with `times`, only the next so many matching answers; `onCut` is called as each is ended.
   */
  cutAnswers(matching: RegExp, options?: { afterBodyBytes?: number; stall?: boolean; times?: number; onCut?: () => void }): void;
  /** Forwards matching requests without Range and If-Range, as a proxy or cache that does not pass them on: a whole file, 200. */
  ignoreRange(matching: RegExp): void;
  close(): Promise<void>;
}

export async function startTestProxy(options: { upstream?: string; prefix?: string } = {}): Promise<TestProxy> {
  const prefix = (options.prefix ?? '').replace(/\/+$/, '');
  const rules: AnswerRule[] = [];
  const rangeIgnored: RegExp[] = [];
  const sockets = new Set<Socket>();
  let answersCut = 0;
  const server: Server = createServer((incoming, outgoing) => {
    const received = incoming.url ?? '/';
    proxy.requests.push(`${incoming.method} ${received}`);
    const path = received.split('?')[0];
    if (prefix && path !== prefix && !path.startsWith(`${prefix}/`)) return void outgoing.writeHead(404, { 'Content-Length': '0' }).end();
    const forwarded = `/${received.slice(prefix.length).replace(/^\//, '')}`;
    const rule = rules.find(({ matching, times }) => times !== 0 && matching.test(`${incoming.method} ${forwarded}`));
    if (rule?.times !== undefined) rule.times--;
    if (rule?.answer) {
      const body = rule.answer.body ?? '';
      incoming.resume();
      // Via says the proxy made this answer itself (RFC 9110 7.6.3): the suite's contract check leaves it alone.
      return void outgoing.writeHead(rule.answer.status, { Via: '1.1 test-proxy', ...rule.answer.headers, 'Content-Length': String(Buffer.byteLength(body)) }).end(body);
    }
    let ended = false;
    const end = () => {
      ended = true;
      answersCut++;
      rule?.onCut?.();
      if (!rule?.stall) outgoing.socket?.destroy();
    };
    if (rule && rule.afterBodyBytes === undefined) {
      incoming.resume();
      return void end();
    }
    const upstream = new URL(proxy.upstream);
    const headers = { ...incoming.headers };
    if (rangeIgnored.some((matching) => matching.test(`${incoming.method} ${forwarded}`))) {
      delete headers.range;
      delete headers['if-range'];
    }
    const toServer = httpRequest({ host: upstream.hostname, port: upstream.port, method: incoming.method, path: forwarded, headers, agent: false }, (answer) => {
      outgoing.writeHead(answer.statusCode!, answer.statusMessage, answer.rawHeaders);
      if (!rule) return void answer.pipe(outgoing);
      outgoing.flushHeaders();
      let left = rule.afterBodyBytes!;
      const stop = () => {
        answer.destroy();
        end();
      };
      if (left === 0) return void stop();
      answer.on('data', (chunk: Buffer) => {
        if (ended) return; // what was still buffered
        if (chunk.length < left) {
          left -= chunk.length;
          outgoing.write(chunk);
          return;
        }
        outgoing.write(chunk.subarray(0, left));
        stop();
      });
      answer.on('end', () => outgoing.end());
    });
    // The server's connection failing is the client's, unless the answer was already ended on purpose.
    toServer.on('error', () => ended || outgoing.socket?.destroy());
    incoming.pipe(toServer);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: TestProxy = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${prefix}`,
    upstream: options.upstream ?? '',
    requests: [],
    get answersCut() {
      return answersCut;
    },
    answer: (matching, answer) => void rules.push({ matching, answer }),
    cutAnswers: (matching, { afterBodyBytes, stall, times, onCut } = {}) => void rules.push({ matching, afterBodyBytes, stall, times, onCut }),
    ignoreRange: (matching) => void rangeIgnored.push(matching),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
