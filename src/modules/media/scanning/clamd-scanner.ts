import { connect, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { ScanCutShortError, ScannerUnavailableError, VirusScanner, type ScanVerdict, type ScannerHealth } from './virus-scanner.js';

export type ClamdAddress = { socket: string } | { host: string; port: number };

/** clamd's INSTREAM chunks are length-prefixed; a modest cap keeps each write small whatever the source yields. */
const MAX_CHUNK = 64 * 1024;
const PING_TIMEOUT_MS = 2_000;
const STREAM_LIMIT_REASON = 'the file is larger than clamd accepts (raise StreamMaxLength in clamd.conf, and CLAMAV_MAX_STREAM_BYTES)';

/**
 * Talks to clamd with its INSTREAM command: `zINSTREAM\0`, then chunks as <uint32 big-endian length><bytes>,
 * then a zero length; clamd answers `stream: OK`, `stream: <signature> FOUND` or `<reason> ERROR`, NUL-terminated.
 * The file streams from storage chunk by chunk, waiting for each write to flush, so memory stays bounded.
 */
export class ClamdScanner extends VirusScanner {
  constructor(
    private readonly address: ClamdAddress,
    private readonly timeoutMs: number,
    /** Files above this are not sent at all; set it to clamd's StreamMaxLength. */
    private readonly maxStreamBytes: number,
  ) {
    super();
  }

  get description(): string {
    return 'socket' in this.address ? `unix:${this.address.socket}` : `tcp://${this.address.host}:${this.address.port}`;
  }

  override verdictWithoutBytes(size: number): ScanVerdict | null {
    return size > this.maxStreamBytes
      ? { result: 'skipped', reason: `the file (${size} bytes) is larger than the scanner accepts (CLAMAV_MAX_STREAM_BYTES, clamd's StreamMaxLength)` }
      : null;
  }

  async scan(content: Readable, size: number): Promise<ScanVerdict> {
    const skipped = this.verdictWithoutBytes(size);
    if (skipped) {
      content.destroy();
      return skipped;
    }
    let socket: Socket | undefined;
    let sent = 0;
    try {
      socket = await this.open(this.timeoutMs);
      const reply = readReply(socket, this.timeoutMs);
      // clamd may answer early (size limit) and close; stop sending then instead of failing on EPIPE.
      let settledReply = false;
      const settled = reply.then(
        () => (settledReply = true),
        () => (settledReply = true),
      );
      const send = async (bytes: Buffer) => {
        await Promise.race([write(socket!, bytes), settled]);
      };
      try {
        await send(Buffer.from('zINSTREAM\0'));
        for await (const chunk of content) {
          if (settledReply) break;
          const data = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
          for (let offset = 0; offset < data.length && !settledReply; offset += MAX_CHUNK) {
            const part = data.subarray(offset, offset + MAX_CHUNK);
            const header = Buffer.alloc(4);
            header.writeUInt32BE(part.length);
            await send(Buffer.concat([header, part]));
            sent += part.length;
          }
        }
        if (!settledReply) await send(Buffer.alloc(4));
      } catch (sendError) {
        // A storage read error is ours to retry; a write error is judged by what clamd answered, below.
        if (!settledReply) {
          socket.destroy();
          reply.catch(() => undefined);
          throw sendError;
        }
      }
      let answer: string;
      try {
        answer = await reply;
      } catch (replyError) {
        // clamd ends an INSTREAM early when it exceeds StreamMaxLength, and closing on unread data resets the
        // connection, which can lose its answer; a clamd restarting mid-scan looks the same once it is back.
        if (sent > 0 && isConnectionLoss(replyError) && (await this.check()).reachable) {
          throw new ScanCutShortError(`clamd at ${this.description} ended the stream after ${sent} bytes`, {
            result: 'skipped',
            reason: `${STREAM_LIMIT_REASON} (clamd ended the stream after ${sent} bytes)`,
          });
        }
        throw replyError;
      }
      return parseReply(answer);
    } catch (error) {
      if (error instanceof ScannerUnavailableError) throw error;
      throw new ScannerUnavailableError(`Virus scan via clamd at ${this.description} failed: ${messageOf(error)}`, { cause: error });
    } finally {
      socket?.destroy();
      content.destroy();
    }
  }

  async check(): Promise<ScannerHealth> {
    const health: ScannerHealth = { configured: true, address: this.description };
    let socket: Socket | undefined;
    try {
      socket = await this.open(PING_TIMEOUT_MS);
      const reply = readReply(socket, PING_TIMEOUT_MS);
      await write(socket, Buffer.from('zPING\0'));
      const answer = await reply;
      if (answer !== 'PONG') throw new Error(`unexpected answer to PING: ${JSON.stringify(answer.slice(0, 100))}`);
      return { ...health, reachable: true };
    } catch (error) {
      return { ...health, reachable: false, error: messageOf(error) };
    } finally {
      socket?.destroy();
    }
  }

  private open(timeoutMs: number): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const socket = 'socket' in this.address ? connect({ path: this.address.socket }) : connect({ host: this.address.host, port: this.address.port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new ScannerUnavailableError(`clamd at ${this.description} did not accept a connection within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(socket);
      });
      socket.once('error', (error) => {
        clearTimeout(timer);
        reject(new ScannerUnavailableError(`clamd at ${this.description} is unreachable: ${error.message}`, { cause: error }));
      });
    });
  }
}

/** Interprets clamd's answer to INSTREAM. */
export function parseReply(reply: string): ScanVerdict {
  const text = reply.replace(/\0+$/, '').trim();
  if (/^(stream: )?OK$/.test(text)) return { result: 'clean' };
  // With AlertExceedsMax, clamd names a file it stopped scanning at one of its limits (MaxFileSize, MaxScanSize, ...):
  // no virus was found, and the file was not wholly judged either.
  const exceeded = /^(?:stream: )?Heuristics\.Limits\.Exceeded\.(\w+) FOUND$/.exec(text);
  if (exceeded) {
    return { result: 'skipped', reason: `clamd did not scan all of the file: it exceeds clamd's ${exceeded[1]} (raise it in clamd.conf, or lower CLAMAV_MAX_STREAM_BYTES to it)` };
  }
  const found = /^(?:stream: )?(.+) FOUND$/.exec(text);
  if (found) return { result: 'infected', threat: found[1].slice(0, 200) };
  if (/size limit exceeded/i.test(text)) return { result: 'skipped', reason: STREAM_LIMIT_REASON };
  throw new ScannerUnavailableError(`clamd answered: ${text.slice(0, 300) || '(nothing)'}`);
}

/** The NUL-terminated answer; limited in size, and in idle time, so a confused peer cannot hold the job. */
function readReply(socket: Socket, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const done = (error?: Error) => {
      socket.setTimeout(0);
      socket.removeAllListeners('data');
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\0');
      if (end >= 0) return resolve(text.slice(0, end));
      if (!error && text.length > 0) return resolve(text);
      reject(error ?? new ScannerUnavailableError('clamd closed the connection without an answer'));
    };
    // An idle timeout: a large file may stream for long, but neither side may go quiet for timeoutMs.
    socket.setTimeout(timeoutMs, () => {
      done(new ScannerUnavailableError(`clamd went quiet for ${timeoutMs} ms without answering`));
      socket.destroy();
    });
    socket.on('data', (data: Buffer) => {
      chunks.push(data);
      length += data.length;
      if (data.includes(0) || length > 4096) done();
    });
    socket.once('end', () => done());
    socket.once('close', () => done());
    socket.once('error', (error) => done(error));
  });
}

function write(socket: Socket, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => socket.write(bytes, (error) => (error ? reject(error) : resolve())));
}

function isConnectionLoss(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EPIPE' || code === 'ECONNRESET' || (error instanceof ScannerUnavailableError && /without an answer/.test(error.message));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
