import { FileStorageError, InvalidResponseError } from './errors.js';
import { type CallOptions, type HttpClient, backoffMs, sleep } from './http.js';
import { type OpenedSource, type UploadProgress, readChunk } from './upload-source.js';

const TUS_VERSION = '1.0.0';
/** Failures after which a tus upload asks HEAD for the offset and continues: the bytes sent so far are kept. */
const RESUMABLE_STATUSES = new Set([409, 423, 429, 500, 502, 503, 504]);

export interface UploadAnnouncement extends CallOptions {
  filename: string;
  name?: string;
  folderId?: string;
  overwrite?: boolean;
  /** Sent again (a restarted process), the creation answers the same upload, which then resumes or is complete. */
  idempotencyKey?: string;
}

export interface ChunkOptions extends CallOptions {
  chunkBytes: number;
  /** How long failures in a row (network errors, 409, 423, 429, 5xx) are retried before the upload gives up. */
  retryMs: number;
  onProgress?: (progress: UploadProgress) => void;
}

/**
 * Announces an upload of `size` bytes to the tus 1.0 endpoint `/v1/uploads` (its creation) and answers its URL:
 * relative as the server gives it (`/v1/uploads/{id}`, sent under the base URL like every other path), or absolute.
 */
export async function createUpload(http: HttpClient, size: number, announcement: UploadAnnouncement): Promise<string> {
  const created = await http.send({
    method: 'POST',
    path: '/v1/uploads',
    headers: {
      'Tus-Resumable': TUS_VERSION,
      'Upload-Length': String(size),
      'Upload-Metadata': encodeMetadata({ filename: announcement.filename, name: announcement.name, folder_id: announcement.folderId, overwrite: announcement.overwrite?.toString() }),
      ...(announcement.idempotencyKey ? { 'Idempotency-Key': announcement.idempotencyKey } : {}),
    },
    signal: announcement.signal,
  });
  await created.body?.cancel();
  const location = created.headers.get('location');
  if (!location) throw new InvalidResponseError({ code: 'invalid_response', message: 'The tus endpoint answered without a Location.', status: created.status, headers: created.headers });
  return location;
}

/** Where an upload stands on the server (tus HEAD): its offset, and the file's id once it is complete. */
export async function uploadState(http: HttpClient, url: string, options: CallOptions & { retry?: boolean } = {}): Promise<{ offset: number; size: number | undefined; fileId: string | null }> {
  const head = await http.send({ method: 'HEAD', path: url, headers: { 'Tus-Resumable': TUS_VERSION }, retry: options.retry ?? false, signal: options.signal });
  const length = head.headers.get('upload-length');
  return { offset: Number(head.headers.get('upload-offset')), size: length === null ? undefined : Number(length), fileId: head.headers.get('x-file-id') };
}

/** Deletes the upload at `url` and the bytes sent so far (tus termination); the server gives its reserved quota back. */
export async function deleteUpload(http: HttpClient, url: string, options: CallOptions = {}): Promise<void> {
  const answer = await http.send({ method: 'DELETE', path: url, headers: { 'Tus-Resumable': TUS_VERSION }, signal: options.signal });
  await answer.body?.cancel();
}

/**
 * Sends the rest of the upload at `url` from `offset` (null: ask the server first), one chunk per PATCH. After a
 * failed PATCH it asks HEAD where the server stands and continues from there, retrying with backoff for `retryMs`.
 * Answers the id of the committed file.
 */
export async function sendUpload(http: HttpClient, source: OpenedSource, url: string, offset: number | null, options: ChunkOptions): Promise<string> {
  const size = source.size!;
  const { signal } = options;
  let fileId: string | null = null;
  // After a failure (or when resuming) the offset is asked again (HEAD) before the next PATCH.
  let offsetUnknown = offset === null;
  let sent = offset ?? 0;
  let failures = 0;
  let failingSince = 0;
  while (fileId === null) {
    try {
      if (offsetUnknown) {
        ({ offset: sent, fileId } = await uploadState(http, url, { signal }));
        offsetUnknown = false;
        continue;
      }
      const chunk = await readChunk(source, sent, Math.min(size, sent + options.chunkBytes));
      const answer = await http.send({
        method: 'PATCH',
        path: url,
        headers: { 'Tus-Resumable': TUS_VERSION, 'Upload-Offset': String(sent), 'Content-Type': 'application/offset+octet-stream' },
        body: { open: () => chunk, replayable: true },
        retry: false,
        signal,
      });
      await answer.body?.cancel();
      sent = Number(answer.headers.get('upload-offset'));
      fileId = answer.headers.get('x-file-id');
      failures = 0;
      options.onProgress?.({ loaded: sent, total: size });
    } catch (error) {
      if (signal?.aborted || !isResumable(error)) throw error;
      if (failures++ === 0) failingSince = Date.now();
      // A PATCH cut off on the way may hold the upload on the server (423) until the server notices, which takes
      // its idle timeout plus the lock's expiry: so failures in a row are retried for a time, not a count.
      const { retryAfter } = error as FileStorageError;
      const waitMs = retryAfter !== undefined ? retryAfter * 1000 : backoffMs(failures - 1);
      if (Date.now() + waitMs - failingSince > options.retryMs) throw error;
      await sleep(waitMs, signal);
      offsetUnknown = true;
    }
  }
  return fileId;
}

function isResumable(error: unknown): boolean {
  if (!(error instanceof FileStorageError)) return false;
  return error.status === undefined || RESUMABLE_STATUSES.has(error.status);
}

/** tus Upload-Metadata: comma-separated `key base64(value)` pairs. */
export function encodeMetadata(values: Record<string, string | undefined>): string {
  return Object.entries(values)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([key, value]) => `${key} ${base64(value)}`)
    .join(',');
}

function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}
