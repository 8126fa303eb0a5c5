import { readdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join, relative, sep } from 'node:path';
import { expect, vi } from 'vitest';
import { BlobStorage } from '../../src/infra/storage/blob-storage.js';
import type { TestApp } from './test-app.js';

export interface UploadOptions {
  name?: string;
  folderId?: string;
  overwrite?: boolean;
  /** File name sent in the multipart part. */
  filename?: string;
  /** Send the form fields after the file part instead of before it. */
  fieldsAfterFile?: boolean;
}

/** Uploads through the real route (POST /v1/files/upload) and returns the raw response. */
export async function upload(t: Pick<TestApp, 'baseUrl'>, auth: Record<string, string>, content: Buffer | string, options: UploadOptions = {}) {
  const body = Buffer.isBuffer(content) ? content : Buffer.from(content);
  const form = new FormData();
  const fields: Array<[string, string]> = [];
  if (options.name !== undefined) fields.push(['name', options.name]);
  if (options.folderId !== undefined) fields.push(['folder_id', options.folderId]);
  if (options.overwrite !== undefined) fields.push(['overwrite', String(options.overwrite)]);
  if (!options.fieldsAfterFile) for (const [k, v] of fields) form.append(k, v);
  form.append('file', new Blob([body]), options.filename ?? 'file.bin');
  if (options.fieldsAfterFile) for (const [k, v] of fields) form.append(k, v);
  const response = await fetch(`${t.baseUrl}/v1/files/upload`, { method: 'POST', headers: auth, body: form });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = (await response.json()) as any;
  return { status: response.status, body: json, headers: response.headers };
}

/** Uploads and expects success; returns the File object. */
export async function uploadOk(t: TestApp, auth: Record<string, string>, content: Buffer | string, options: UploadOptions = {}) {
  const res = await upload(t, auth, content, options);
  if (res.status !== 200) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** Every blob file under the test's STORAGE_DIR, as keys relative to it. */
export function listBlobs(t: TestApp, prefix = ''): string[] {
  return listBlobsIn(t.config.storage.dir, prefix);
}

/** Every blob file under a blob directory (a test app's or a server process's STORAGE_DIR) whose key starts with `prefix` (as LocalBlobStorage.list). */
export function listBlobsIn(root: string, prefix = ''): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries: import('node:fs').Dirent[] = [];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else out.push(relative(root, full).split(sep).join('/'));
    }
  };
  walk(join(root, prefix.slice(0, prefix.lastIndexOf('/') + 1)));
  return out.filter((key) => key.startsWith(prefix));
}

/** A signed URL of the API rewritten onto the test server's address. */
export function onTestServer(t: TestApp, url: string): string {
  const parsed = new URL(url);
  return `${t.baseUrl}${parsed.pathname}${parsed.search}`;
}

/**
 * How a raw upload ended: `answered` (the server sent a response), `aborted` (the client hung up
 * after `abortAfter` bytes, as planned) or `cut-off` (with `holdAfter`: the connection died, without
 * an answer, while the client held it open). Any other end of the connection rejects: a test must
 * never mistake a failure for the hang-up it planned.
 */
export type RawUploadOutcome = 'answered' | 'aborted' | 'cut-off';

export interface RawUploadResult {
  outcome: RawUploadOutcome;
  /** The response status; null unless answered. */
  status: number | null;
  body: any;
  /** Bytes of the file part written to the connection. */
  sent: number;
}

/**
 * A multipart upload over a raw HTTP connection, for what fetch cannot do: chunked bodies, a
 * declared Content-Length the client never finishes, or hanging up halfway. Streams `fileSize`
 * zero bytes in 1 MiB chunks and stops as soon as an answer arrives (or after `abortAfter` bytes; or, with
 * `holdAfter`, goes quiet after that many bytes, calls `onHold` with a way to hang up, and resolves once the connection dies).
 */
export function rawUpload(
  t: Pick<TestApp, 'baseUrl'>,
  auth: Record<string, string>,
  options: {
    fileSize: number;
    declaredLength?: number;
    abortAfter?: number;
    holdAfter?: number;
    filename?: string;
    onHold?: (hangUp: () => void) => void;
    /** Form fields sent before the file part. */
    fields?: Array<[string, string]>;
  },
): Promise<RawUploadResult> {
  const boundary = `----fss${Date.now()}`;
  const fields = (options.fields ?? []).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`).join('');
  const head = Buffer.from(`${fields}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${options.filename ?? 'big.bin'}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const url = new URL(`${t.baseUrl}/v1/files/upload`);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...auth, 'Content-Type': `multipart/form-data; boundary=${boundary}` };
    if (options.declaredLength !== undefined) headers['Content-Length'] = options.declaredLength;
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers });
    let sent = 0;
    let answered = false;
    let holding = false;
    let settled = false;
    const finish = (value: RawUploadResult) => {
      if (!settled) {
        settled = true;
        resolve(value);
      }
    };
    const fail = (error: Error) => {
      if (!settled) {
        settled = true;
        reject(error);
      }
    };
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => finish({ outcome: 'answered', status: res.statusCode ?? null, body: text ? JSON.parse(text) : null, sent }));
      res.on('error', () => finish({ outcome: 'answered', status: res.statusCode ?? null, body: null, sent }));
    });
    req.on('error', (error) => {
      // A server that answers early may reset the rest of the body: the answer is what counts.
      if (answered) return;
      if (holding) return finish({ outcome: 'cut-off', status: null, body: null, sent });
      fail(new Error(`raw upload failed after ${sent} bytes, before any answer or planned hang-up: ${error.message}`));
    });
    const chunk = Buffer.alloc(1024 * 1024);
    const pump = async () => {
      req.write(head);
      while (sent < options.fileSize && !answered && !req.destroyed) {
        if (options.abortAfter !== undefined && sent >= options.abortAfter) {
          finish({ outcome: 'aborted', status: null, body: null, sent });
          req.destroy();
          return;
        }
        // Stop sending but keep the connection open: an upload in progress until the server goes away.
        if (options.holdAfter !== undefined && sent >= options.holdAfter) {
          holding = true;
          options.onHold?.(() => req.destroy());
          return;
        }
        // Never past a planned hang-up or hold: a body smaller than one chunk would otherwise be sent whole and, with
        // a larger declared length, leave the server waiting for bytes that never come.
        const stopAt = Math.min(options.fileSize, options.abortAfter ?? Infinity, options.holdAfter ?? Infinity);
        const n = Math.min(chunk.length, stopAt - sent);
        sent += n;
        if (!req.write(chunk.subarray(0, n))) await new Promise((r) => req.once('drain', r));
      }
      if (!answered && !req.destroyed) req.end(tail);
    };
    pump().catch((error: Error) => fail(error));
  });
}

/**
 * Overwrites `name` with `content` while holding open the move of its new bytes to the key the committed row names
 * (an upload commits its row first), and fetches `url` in that gap. Asserts the download is still waiting while the
 * move is held, then lets the move go and answers the download.
 */
export async function downloadDuringHeldOverwrite(t: TestApp, auth: Record<string, string>, name: string, content: string, url: string): Promise<Response> {
  const storage = t.app.get(BlobStorage);
  const move = storage.move.bind(storage);
  let releaseMove!: () => void;
  const moveReleased = new Promise<void>((resolve) => (releaseMove = resolve));
  let moveStarted!: () => void;
  const moving = new Promise<void>((resolve) => (moveStarted = resolve));
  const held = vi.spyOn(storage, 'move').mockImplementation(async (from, to) => {
    moveStarted();
    await moveReleased;
    return move(from, to);
  });
  try {
    const overwriting = uploadOk(t, auth, content, { name, overwrite: true });
    await moving;
    const download = fetch(url);
    const early = await Promise.race([download.then((res) => res.status), new Promise((resolve) => setTimeout(() => resolve('still waiting'), 300))]);
    expect(early).toBe('still waiting');
    releaseMove();
    const res = await download;
    await overwriting;
    return res;
  } finally {
    releaseMove();
    held.mockRestore();
  }
}
