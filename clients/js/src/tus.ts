import { FileStorageError, InvalidResponseError } from './errors.js';
import { type CallOptions, type HttpClient, backoffMs, sleep } from './http.js';
import { type OpenedSource, type UploadProgress, readChunk } from './upload-source.js';

const TUS_VERSION = '1.0.0';
/** Failures after which a tus upload asks HEAD for the offset and continues: the bytes sent so far are kept. */
const RESUMABLE_STATUSES = new Set([409, 423, 429, 500, 502, 503, 504]);

export interface ResumableUploadOptions extends CallOptions {
  filename: string;
  name?: string;
  folderId?: string;
  overwrite?: boolean;
  chunkBytes: number;
  /** How long failures in a row (network errors, 409, 423, 429, 5xx) are retried before the upload gives up. */
  retryMs: number;
  onProgress?: (progress: UploadProgress) => void;
}

/**
 * Uploads a source of known size through the tus 1.0 endpoint `/v1/uploads`, one chunk per PATCH. After a failed
 * PATCH it asks HEAD where the server stands and continues from there, retrying with backoff for `retryMs`.
 * Answers the id of the committed file.
 */
export async function uploadResumable(http: HttpClient, source: OpenedSource, options: ResumableUploadOptions): Promise<string> {
  const size = source.size!;
  const { signal } = options;
  const created = await http.send({
    method: 'POST',
    path: '/v1/uploads',
    headers: {
      'Tus-Resumable': TUS_VERSION,
      'Upload-Length': String(size),
      'Upload-Metadata': encodeMetadata({ filename: options.filename, name: options.name, folder_id: options.folderId, overwrite: options.overwrite?.toString() }),
    },
    signal,
  });
  await created.body?.cancel();
  // Location is relative (/v1/uploads/{id}): under the base URL like every other path; an absolute one is used as it is.
  const location = created.headers.get('location');
  if (!location) throw new InvalidResponseError({ code: 'invalid_response', message: 'The tus endpoint answered without a Location.', status: created.status, headers: created.headers });

  let offset = 0;
  let fileId: string | null = null;
  // After a failure the offset is asked again (HEAD) before the next PATCH.
  let offsetUnknown = false;
  let failures = 0;
  let failingSince = 0;
  while (fileId === null) {
    try {
      if (offsetUnknown) {
        const head = await http.send({ method: 'HEAD', path: location, headers: { 'Tus-Resumable': TUS_VERSION }, retry: false, signal });
        offset = Number(head.headers.get('upload-offset'));
        fileId = head.headers.get('x-file-id');
        offsetUnknown = false;
        continue;
      }
      const chunk = await readChunk(source, offset, Math.min(size, offset + options.chunkBytes));
      const answer = await http.send({
        method: 'PATCH',
        path: location,
        headers: { 'Tus-Resumable': TUS_VERSION, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' },
        body: { open: () => chunk, replayable: true },
        retry: false,
        signal,
      });
      await answer.body?.cancel();
      offset = Number(answer.headers.get('upload-offset'));
      fileId = answer.headers.get('x-file-id');
      failures = 0;
      options.onProgress?.({ loaded: offset, total: size });
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
