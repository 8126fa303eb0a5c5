import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { storageOf } from '../../support/files.js';
import { rawExchange } from '../../support/raw-http.js';
import { rawUpload } from '../../support/uploads.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';

/**
 * Sends a request head and then its whole body, `bodyLength` bytes, before reading a byte of the answer, as Python's
 * http.client and Ruby's Net::HTTP do; returns what the server wrote, or the socket error that ended the exchange.
 */
function sendAllThenRead(baseUrl: string, head: string, bodyLength: number): Promise<{ answer: string; error: string | null }> {
  const url = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    socket.pause();
    let answer = '';
    let error: string | null = null;
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('error', (cause: NodeJS.ErrnoException) => (error = cause.code ?? cause.message));
    socket.on('close', () => resolve({ answer, error }));
    socket.setTimeout(30_000, () => socket.destroy(new Error('no answer within 30 s')));
    socket.write(head);
    const chunk = Buffer.alloc(64 * 1024);
    let left = bodyLength;
    const send = () => {
      while (left > 0 && !socket.destroyed) {
        const part = chunk.subarray(0, Math.min(left, chunk.length));
        left -= part.length;
        if (!socket.write(part)) return;
      }
      if (left === 0) socket.resume();
    };
    socket.on('drain', send);
    send();
  });
}

/**
 * Sends a request head with `Expect: 100-continue` and its body only once the server answers 100, as curl does for
 * large bodies; returns the status lines in the order they came, and the final answer.
 */
function sendExpectingContinue(baseUrl: string, head: string, body: string): Promise<{ statusLines: string[]; final: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(`${head}\r\nHost: x\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`));
    let answer = '';
    let bodySent = false;
    socket.on('data', (chunk) => {
      answer += chunk;
      if (!bodySent && answer.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
        bodySent = true;
        socket.write(body);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const statusLines = answer.split('\r\n').filter((line) => line.startsWith('HTTP/1.1 '));
      resolve({ statusLines, final: answer.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '') });
    });
    socket.setTimeout(20_000, () => socket.destroy(new Error('no answer within 20 s')));
  });
}

function parseAnswer(raw: string): { status: number; headers: string; body: any } {
  const [head, body] = raw.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), headers: head, body: JSON.parse(body) };
}

const MiB = 1024 * 1024;

describe('answers of the HTTP layer itself', () => {
  let t: TestApp;
  let owner: TestAccount;
  const IDLE_SECONDS = 2;

  beforeAll(async () => {
    t = await startTestApp({ HTTP_IDLE_TIMEOUT_SECONDS: String(IDLE_SECONDS), HTTP_HEADERS_TIMEOUT_SECONDS: '1' });
    owner = await createAccount(t.app);
  });
  afterAll(() => t.close());

  it.each([
    ['a malformed request line', 'GARBAGE\r\n\r\n', 400],
    ['a request line with a bad method', 'G@T /v1/files HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['headers over 16 KiB', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ])('answers %s with the JSON error envelope', async (_label, bytes, status) => {
    const answer = parseAnswer(await rawExchange(t.baseUrl, bytes));
    expect(answer.status).toBe(status);
    expect(answer.headers).toMatch(/content-type: application\/json/i);
    expect(answer.body).toEqual({ success: false, error: { code: 'invalid_request', message: expect.any(String) } });
  });

  // Refused on its Content-Length before a byte of the body is read, the connection is closed after the answer. Closed
  // at once, with the body still arriving, the kernel would reset it and the client would never read the 413.
  it.each(['a multipart upload', 'a tus PATCH'])('lets a client that sends its whole body before reading hear why %s was refused', async (kind) => {
    const free = await createAccount(t.app, { plan: 'free' });
    const authorization = free.auth.Authorization;
    let head: string;
    let bodyLength: number;
    if (kind === 'a multipart upload') {
      bodyLength = 101 * MiB;
      head = `POST /v1/files/upload HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: ${bodyLength}\r\n\r\n`;
    } else {
      const created = await fetch(`${t.baseUrl}/v1/uploads`, {
        method: 'POST',
        headers: { ...free.auth, 'Tus-Resumable': '1.0.0', 'Upload-Defer-Length': '1', 'Upload-Metadata': `filename ${Buffer.from('big.bin').toString('base64')}` },
      });
      expect(created.status).toBe(201);
      bodyLength = 100 * MiB + 1;
      const path = new URL(created.headers.get('location')!, t.baseUrl).pathname;
      head = `PATCH ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: ${bodyLength}\r\n\r\n`;
    }
    const { answer, error } = await sendAllThenRead(t.baseUrl, head, bodyLength);
    expect(error).toBeNull();
    const refused = parseAnswer(answer);
    expect(refused.status).toBe(413);
    expect(refused.headers).toMatch(/^connection: close$/im);
    expect(refused.body).toMatchObject({ success: false, error: { code: 'file_too_large', details: { file_size: bodyLength, plan: 'free' } } });
  }, 60_000);

  it('answers Expect: 100-continue with 100 only for a request whose body it goes on to read', async () => {
    const free = await createAccount(t.app, { plan: 'free' });
    const multipart = (content: string) => `--b\r\nContent-Disposition: form-data; name="file"; filename="asked.txt"\r\n\r\n${content}\r\n--b--\r\n`;
    const uploadHead = (authorization: string) => `POST /v1/files/upload HTTP/1.1\r\nAuthorization: ${authorization}\r\nContent-Type: multipart/form-data; boundary=b`;

    const accepted = await sendExpectingContinue(t.baseUrl, uploadHead(free.auth.Authorization), multipart('asked first'));
    expect(accepted.statusLines).toEqual(['HTTP/1.1 100 Continue', 'HTTP/1.1 200 OK']);
    expect(parseAnswer(accepted.final).body.data).toMatchObject({ name: 'asked.txt', size: 'asked first'.length });

    const folder = await sendExpectingContinue(t.baseUrl, `POST /v1/folders HTTP/1.1\r\nAuthorization: ${free.auth.Authorization}\r\nContent-Type: application/json`, '{"name":"Asked first"}');
    expect(folder.statusLines).toEqual(['HTTP/1.1 100 Continue', 'HTTP/1.1 201 Created']);

    const created = await fetch(`${t.baseUrl}/v1/uploads`, {
      method: 'POST',
      headers: { ...free.auth, 'Tus-Resumable': '1.0.0', 'Upload-Length': '5', 'Upload-Metadata': `filename ${Buffer.from('tus.txt').toString('base64')}` },
    });
    const uploadPath = new URL(created.headers.get('location')!, t.baseUrl).pathname;
    const patched = await sendExpectingContinue(
      t.baseUrl,
      `PATCH ${uploadPath} HTTP/1.1\r\nAuthorization: ${free.auth.Authorization}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream`,
      'hello',
    );
    expect(patched.statusLines).toEqual(['HTTP/1.1 100 Continue', 'HTTP/1.1 204 No Content']);
    expect(patched.final).toMatch(/^x-file-id: file_/im);

    // Refused on its head alone: the final answer comes instead of 100, and no body is sent.
    const unknownKey = await sendExpectingContinue(t.baseUrl, uploadHead('Bearer fss_unknown'), multipart('never sent'));
    expect(unknownKey.statusLines).toEqual(['HTTP/1.1 401 Unauthorized']);
    const tooLarge = await rawExchange(
      t.baseUrl,
      `${uploadHead(free.auth.Authorization)}\r\nHost: x\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Length: ${101 * MiB}\r\n\r\n`,
    );
    expect(tooLarge).toMatch(/^HTTP\/1\.1 413 /);
    expect(parseAnswer(tooLarge).body.error).toMatchObject({ code: 'file_too_large', details: { file_size: 101 * MiB, plan: 'free' } });
  });

  it('lets a slow upload that keeps moving run longer than the idle and header time limits', async () => {
    const boundary = 'slowupload';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.txt"\r\n\r\n`;
    const tail = `\r\n--${boundary}--\r\n`;
    const pieces = 12;
    const url = new URL(`${t.baseUrl}/v1/files/upload`);
    const started = Date.now();
    const res = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { ...owner.auth, 'Content-Type': `multipart/form-data; boundary=${boundary}` } });
      req.on('response', (response) => {
        let text = '';
        response.on('data', (c) => (text += c));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.write(head);
      let sent = 0;
      // One piece every 500 ms: never idle for the 2 s limit, yet 6 s in all.
      const timer = setInterval(() => {
        req.write(`piece ${sent}\n`);
        if (++sent === pieces) {
          clearInterval(timer);
          req.end(tail);
        }
      }, 500);
    });
    expect(Date.now() - started).toBeGreaterThan(IDLE_SECONDS * 1000 * 2);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'slow.txt', size: Array.from({ length: pieces }, (_, i) => `piece ${i}\n`).join('').length });
  }, 60_000);

  it('answers an upload that goes idle with 408 in the envelope and gives its reservation back', async () => {
    const before = await storageOf(t.app, owner.accountId);
    const res = await rawUpload(t, owner.auth, { fileSize: 4 * 1024 * 1024, holdAfter: 1024 * 1024 });
    expect(res.status).toBe(408);
    expect(res.body).toEqual({ success: false, error: { code: 'invalid_request', message: expect.stringContaining('idle') } });
    await vi.waitFor(async () => expect(await storageOf(t.app, owner.accountId)).toEqual(before), { timeout: 10_000, interval: 200 });
  }, 60_000);
});

describe('a request body that keeps coming after the answer', () => {
  let t: TestApp;
  const LINGER_SECONDS = 1;

  beforeAll(async () => {
    t = await startTestApp({ HTTP_LINGER_SECONDS: String(LINGER_SECONDS) });
  });
  afterAll(() => t.close());

  it.each([
    ['an upload with an unknown key', 'POST /v1/files/upload HTTP/1.1\r\nAuthorization: Bearer fss_unknown\r\nContent-Type: multipart/form-data; boundary=b', 401],
    ['a route that does not exist', 'POST /v1/nowhere HTTP/1.1\r\nContent-Type: application/octet-stream', 404],
  ])('is read for HTTP_LINGER_SECONDS at most behind %s, then its connection is closed', async (_label, head, status) => {
    const url = new URL(t.baseUrl);
    const GUARD_MS = 20_000;
    // An endless chunked body: Node alone would read it for as long as it came.
    const outcome = await new Promise<{ answer: string; closedBy: 'server' | 'guard'; sentMiB: number }>((resolve) => {
      const socket = connect(Number(url.port), url.hostname);
      const chunk = Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000), Buffer.from('\r\n')]);
      let answer = '';
      let sent = 0;
      let closedBy: 'server' | 'guard' = 'server';
      const pump = setInterval(() => {
        if (socket.destroyed || socket.writableNeedDrain) return;
        socket.write(chunk);
        sent += chunk.length;
      }, 1);
      const guard = setTimeout(() => {
        closedBy = 'guard';
        socket.destroy();
      }, GUARD_MS);
      socket.on('data', (data) => (answer += data));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(pump);
        clearTimeout(guard);
        resolve({ answer, closedBy, sentMiB: sent / MiB });
      });
      socket.write(`${head}\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
    });
    expect(outcome.closedBy).toBe('server');
    expect(outcome.sentMiB).toBeGreaterThan(1);
    expect(parseAnswer(outcome.answer).status).toBe(status);
  }, 30_000);
});


describe('a kept-alive connection between requests', () => {
  let t: TestApp;
  const IDLE_SECONDS = 8;

  beforeAll(async () => {
    t = await startTestApp({ HTTP_IDLE_TIMEOUT_SECONDS: String(IDLE_SECONDS) });
  });
  afterAll(() => t.close());

  /** Sends one request on `socket` and answers the head of its answer, read once the body has come. */
  const exchange = (socket: ReturnType<typeof connect>) =>
    new Promise<string>((resolve, reject) => {
      if (socket.destroyed) return reject(new Error('the server had closed the connection'));
      let answer = '';
      const onData = (chunk: Buffer) => {
        answer += chunk.toString('latin1');
        const [head, body] = answer.split('\r\n\r\n');
        const length = Number(/^content-length: (\d+)$/im.exec(head ?? '')?.[1] ?? NaN);
        if (body !== undefined && Buffer.byteLength(body, 'latin1') >= length) {
          socket.off('data', onData);
          resolve(head);
        }
      };
      socket.on('data', onData);
      socket.once('close', () => reject(new Error(`the server closed the connection; it had answered: ${JSON.stringify(answer)}`)));
      socket.once('error', reject);
      socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    });

  it('stays open as long as the idle limit, not Node\'s 5 s, and says so in Keep-Alive', async () => {
    const url = new URL(t.baseUrl);
    const socket = connect(Number(url.port), url.hostname);
    try {
      const first = await exchange(socket);
      expect(first).toMatch(/^HTTP\/1\.1 200 /);
      expect(first).toMatch(new RegExp(`^keep-alive: timeout=${IDLE_SECONDS}$`, 'im'));
      // Longer than Node's default keep-alive (5 s) and shorter than the idle limit: a proxy reusing the connection now
      // must get an answer, not a connection closed under it.
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      expect(await exchange(socket)).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      socket.destroy();
    }
  }, 30_000);
});
