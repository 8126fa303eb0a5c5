import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ClamdScanner, parseReply } from './clamd-scanner.js';
import { ScanCutShortError, ScannerUnavailableError } from './virus-scanner.js';

/**
 * The INSTREAM framing and failure handling, against a stand-in clamd that decodes what it receives.
 * Real detection is tested end to end against Debian's clamd (test/e2e/media/scans.e2e-spec.ts).
 */
type Behaviour = (socket: Socket, received: () => { command: string; body: Buffer; terminated: boolean }) => void;

const NO_LIMIT = Number.MAX_SAFE_INTEGER;
let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function fakeClamd(onData: Behaviour): Promise<number> {
  server = createServer((socket) => {
    let buffer = Buffer.alloc(0);
    const decode = () => {
      const nul = buffer.indexOf(0);
      const command = buffer.subarray(0, nul).toString();
      const parts: Buffer[] = [];
      let offset = nul + 1;
      let terminated = false;
      while (offset + 4 <= buffer.length) {
        const length = buffer.readUInt32BE(offset);
        if (length === 0) {
          terminated = true;
          break;
        }
        if (offset + 4 + length > buffer.length) break;
        parts.push(buffer.subarray(offset + 4, offset + 4 + length));
        offset += 4 + length;
      }
      return { command, body: Buffer.concat(parts), terminated };
    };
    socket.on('data', (data) => {
      buffer = Buffer.concat([buffer, data]);
      onData(socket, decode);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

describe('ClamdScanner (INSTREAM)', () => {
  it('streams the bytes in length-prefixed chunks and reads a clean verdict', async () => {
    const content = randomBytes(1_000_000);
    let seen = '';
    const port = await fakeClamd((socket, received) => {
      const { command, body, terminated } = received();
      if (!terminated) return;
      seen = `${command}|${createHash('sha256').update(body).digest('hex')}`;
      socket.end('stream: OK\0');
    });
    const verdict = await new ClamdScanner({ host: '127.0.0.1', port }, 5000, NO_LIMIT).scan(Readable.from([content.subarray(0, 200_000), content.subarray(200_000)]), 1);
    expect(verdict).toEqual({ result: 'clean' });
    expect(seen).toBe(`zINSTREAM|${createHash('sha256').update(content).digest('hex')}`);
  });

  it('reports the signature of an infected stream', async () => {
    const port = await fakeClamd((socket, received) => received().terminated && socket.end('stream: Win.Test.EICAR_HDB-1 FOUND\0'));
    expect(await new ClamdScanner({ host: '127.0.0.1', port }, 5000, NO_LIMIT).scan(Readable.from([Buffer.from('x')]), 1)).toEqual({ result: 'infected', threat: 'Win.Test.EICAR_HDB-1' });
  });

  it('stops sending when clamd answers early that the stream is too long, and marks it skipped', async () => {
    const port = await fakeClamd((socket, received) => {
      if (received().body.length > 100_000) socket.end('INSTREAM size limit exceeded. ERROR\0');
    });
    const endless = Readable.from((function* () {
      for (let i = 0; i < 10_000; i++) yield randomBytes(64 * 1024);
    })());
    const verdict = await new ClamdScanner({ host: '127.0.0.1', port }, 5000, NO_LIMIT).scan(endless, 1);
    expect(verdict).toMatchObject({ result: 'skipped', reason: expect.stringMatching(/StreamMaxLength/) });
  });

  it('does not send a file larger than CLAMAV_MAX_STREAM_BYTES at all, and marks it skipped', async () => {
    let connections = 0;
    const port = await fakeClamd(() => connections++);
    const content = Readable.from([Buffer.alloc(2000)]);
    const verdict = await new ClamdScanner({ host: '127.0.0.1', port }, 5000, 1000).scan(content, 2000);
    expect(verdict).toMatchObject({ result: 'skipped', reason: expect.stringMatching(/CLAMAV_MAX_STREAM_BYTES/) });
    expect(connections).toBe(0);
    expect(content.destroyed).toBe(true);
    // The scan job asks first, so such a file's blob is not even opened.
    const scanner = new ClamdScanner({ host: '127.0.0.1', port }, 5000, 1000);
    expect(scanner.verdictWithoutBytes(2000)).toEqual(verdict);
    expect(scanner.verdictWithoutBytes(1000)).toBeNull();
  });

  it('reports a connection reset mid-stream by a clamd that still answers PING as a cut, with its size limit as the verdict if it repeats', async () => {
    const port = await fakeClamd((socket, received) => {
      const { command, body } = received();
      if (command === 'zPING') socket.end('PONG\0');
      // What clamd's close on unread data looks like to us: a reset, the answer lost.
      else if (body.length > 100_000) socket.resetAndDestroy();
    });
    const endless = Readable.from((function* () {
      for (let i = 0; i < 10_000; i++) yield randomBytes(64 * 1024);
    })());
    const cut = await new ClamdScanner({ host: '127.0.0.1', port }, 5000, NO_LIMIT).scan(endless, 1).catch((error: unknown) => error);
    expect(cut).toBeInstanceOf(ScanCutShortError);
    expect((cut as ScanCutShortError).verdictIfRepeated).toMatchObject({ result: 'skipped', reason: expect.stringMatching(/StreamMaxLength.*ended the stream after/) });
  });

  it('gives up on a clamd that goes quiet', { timeout: 20_000 }, async () => {
    const port = await fakeClamd(() => undefined);
    const started = Date.now();
    await expect(new ClamdScanner({ host: '127.0.0.1', port }, 1000, NO_LIMIT).scan(Readable.from([Buffer.from('x')]), 1)).rejects.toThrow(/went quiet/);
    // The fake never answers: without the give-up this would wait for ever. Loose, for a loaded machine.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('says clamd is unreachable when nothing listens', async () => {
    const port = await fakeClamd(() => undefined);
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    await expect(new ClamdScanner({ host: '127.0.0.1', port }, 1000, NO_LIMIT).scan(Readable.from([Buffer.from('x')]), 1)).rejects.toBeInstanceOf(ScannerUnavailableError);
  });

  it('fails (for a retry) when the stored bytes cannot be read', async () => {
    const port = await fakeClamd(() => undefined);
    const broken = new Readable({
      read() {
        this.destroy(new Error('EIO: storage read failed'));
      },
    });
    await expect(new ClamdScanner({ host: '127.0.0.1', port }, 5000, NO_LIMIT).scan(broken, 1)).rejects.toThrow(/storage read failed/);
  });

  it('answers PING for /health', async () => {
    const port = await fakeClamd((socket, received) => received().command === 'zPING' && socket.end('PONG\0'));
    expect(await new ClamdScanner({ host: '127.0.0.1', port }, 5000, NO_LIMIT).check()).toEqual({ configured: true, address: `tcp://127.0.0.1:${port}`, reachable: true });
  });
});

describe('parseReply', () => {
  it.each([
    ['stream: OK', { result: 'clean' }],
    ['stream: Eicar-Test-Signature FOUND', { result: 'infected', threat: 'Eicar-Test-Signature' }],
    ['stream: Some Name With Spaces FOUND', { result: 'infected', threat: 'Some Name With Spaces' }],
  ])('%s', (reply, verdict) => expect(parseReply(reply)).toEqual(verdict));

  it('takes a limit clamd stopped scanning at (AlertExceedsMax) for a file not wholly scanned, not for a virus', () => {
    expect(parseReply('stream: Heuristics.Limits.Exceeded.MaxScanSize FOUND')).toEqual({ result: 'skipped', reason: expect.stringMatching(/exceeds clamd's MaxScanSize/) });
    // Other heuristics are clamd's verdict, as the operator enabled them.
    expect(parseReply('stream: Heuristics.Encrypted.Zip FOUND')).toEqual({ result: 'infected', threat: 'Heuristics.Encrypted.Zip' });
  });

  it('treats any other error as a failure worth retrying', () => {
    expect(() => parseReply('stream: Can\'t allocate memory ERROR')).toThrow(ScannerUnavailableError);
    expect(() => parseReply('')).toThrow(ScannerUnavailableError);
  });
});
