import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { ApiError } from '../../common/errors/api-error.js';
import type { BlobStorage, ByteRange } from './blob-storage.js';

/** At most this many bytes are sent from one buffer rather than streamed: thumbnails and small files. */
const BUFFERED_DOWNLOAD_BYTES = 64 * 1024;

/** What sendBlob says about the file, taken back when its bytes cannot be read. */
const BLOB_HEADERS = ['ETag', 'Accept-Ranges', 'Last-Modified', 'Cache-Control', 'Content-Type', 'Content-Disposition', 'Content-Range', 'Content-Length'];

export interface BlobDescription {
  key: string;
  size: number;
  /** Content MD5 (hex), used as the strong ETag. */
  md5: string;
  contentType: string;
  fileName: string;
  modifiedAt: Date;
  /** `attachment` (download) or `inline` (thumbnails). */
  disposition?: 'attachment' | 'inline';
}

/**
 * Streams a blob as an HTTP response the way a mature file API does: strong ETag (the MD5) with If-Match and
 * If-Unmodified-Since (412) and If-None-Match or If-Modified-Since (304), a single byte range (206, or 416 when unsatisfiable; If-Range
 * honoured, with the ETag or the Last-Modified date), HEAD, and a Content-Disposition that survives any file name. Memory
 * stays flat: bytes are piped. `now` is the time of this answer, which decides whether a date is a strong validator.
 */
export async function sendBlob(request: Request, response: Response, storage: BlobStorage, blob: BlobDescription, now: Date = new Date()): Promise<void> {
  const etag = `"${blob.md5}"`;
  for (const [name, value] of Object.entries(versionHeaders(blob))) response.setHeader(name, value);

  if (!preconditionsHold(request.headers, blob)) throw preconditionFailed(blob);
  if (notModified(request.headers, blob, now)) {
    response.status(304).end();
    return;
  }

  const range = requestedRange(request.headers, blob, now);
  if (range === 'unsatisfiable') throw rangeNotSatisfiable(blob);

  response.setHeader('Content-Type', blob.contentType);
  response.setHeader('Content-Disposition', contentDisposition(blob.disposition ?? 'attachment', blob.fileName));
  if (range) {
    response.status(206);
    response.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${blob.size}`);
    response.setHeader('Content-Length', String(range.end - range.start + 1));
  } else {
    response.status(200);
    response.setHeader('Content-Length', String(blob.size));
  }
  if (request.method === 'HEAD' || blob.size === 0) {
    response.end();
    return;
  }
  // The whole file as a range too: a reader that knows where to stop sizes its buffers to the file
  // (not 256 KiB for a 1 KiB file) and needs no extra read to find the end.
  const bytes = range ?? { start: 0, end: blob.size - 1 };
  try {
    if (bytes.end - bytes.start < BUFFERED_DOWNLOAD_BYTES) {
      response.end(await storage.readBytes(blob.key, bytes));
      return;
    }
    await pipeline(await storage.read(blob.key, bytes), response);
  } catch (error) {
    // A blob missing or cut short outside the service (both reads refuse one shorter than the range): an error
    // answer, while one can still be sent, must not describe the file it cannot carry.
    if (!response.headersSent) for (const name of BLOB_HEADERS) response.removeHeader(name);
    throw error;
  }
}

/** The request headers that decide whether sendBlob answers 412, 304, the file, a range, or 416. */
export interface BlobConditions {
  'if-match'?: string;
  'if-unmodified-since'?: string;
  'if-none-match'?: string;
  'if-modified-since'?: string;
  range?: string;
  'if-range'?: string | string[];
}

type BlobVersion = Pick<BlobDescription, 'size' | 'md5' | 'modifiedAt'>;

/**
 * Throws the 412 or 416 sendBlob would answer for these request headers and this file, so a caller can refuse
 * the request before counting it as a download.
 */
export function assertRangeSatisfiable(conditions: BlobConditions, blob: BlobVersion, now: Date = new Date()): void {
  if (!preconditionsHold(conditions, blob)) throw preconditionFailed(blob);
  // Not modified (304) is answered before the range is looked at.
  if (notModified(conditions, blob, now)) return;
  if (requestedRange(conditions, blob, now) === 'unsatisfiable') throw rangeNotSatisfiable(blob);
}

/** What every answer about the file says of the version it describes, a 416 included. */
function versionHeaders(blob: BlobVersion): Record<string, string> {
  return {
    ETag: `"${blob.md5}"`,
    'Accept-Ranges': 'bytes',
    'Last-Modified': lastModified(blob),
    'Cache-Control': 'private, max-age=0, must-revalidate',
    'X-Content-Type-Options': 'nosniff',
  };
}

/** The Last-Modified header of the file: an HTTP date (IMF-fixdate), to the second. */
function lastModified(blob: BlobVersion): string {
  return blob.modifiedAt.toUTCString();
}

/** The range to send: null for the whole file (no Range, or an If-Range that does not hold). */
function requestedRange(conditions: BlobConditions, blob: BlobVersion, now: Date): ByteRange | 'unsatisfiable' | null {
  const header = conditions.range;
  if (header === undefined) return null;
  const ifRange = conditions['if-range'];
  return ifRange === undefined || ifRangeHolds(ifRange, blob, now) ? parseRange(header, blob.size) : null;
}

/**
 * RFC 9110 13.1.5. An entity tag holds when it is the file's (strong) ETag; a weak one never does. An HTTP date holds
 * when it is exactly the file's Last-Modified and is a strong validator (8.8.2.2): at least a second before the Date of
 * this answer. Within the second of a change the file could change again under the same date, which is why a client
 * may send only a date it got at least a second after it; until then the whole file is sent.
 */
function ifRangeHolds(ifRange: string | string[], blob: BlobVersion, now: Date): boolean {
  if (Array.isArray(ifRange)) return false;
  const validator = ifRange.trim();
  if (validator.startsWith('"') || validator.startsWith('W/')) return validator === `"${blob.md5}"`;
  const seconds = (time: Date) => Math.floor(time.getTime() / 1000);
  return validator === lastModified(blob) && seconds(now) - seconds(blob.modifiedAt) >= 1;
}

function rangeNotSatisfiable(blob: BlobVersion): ApiError {
  return new ApiError(416, 'invalid_request', `The requested range is not satisfiable for a ${blob.size}-byte file.`, { size: blob.size }, {
    ...versionHeaders(blob),
    'Content-Range': `bytes */${blob.size}`,
  });
}

/**
 * RFC 9110 13.2.2, steps 1 and 2: If-Match (strong comparison: a weak tag never matches; `*` matches any version), or
 * without it If-Unmodified-Since (to the second). A client fetching a file in several ranges sends its ETag this way
 * so that it never puts together parts of two versions.
 */
function preconditionsHold(conditions: BlobConditions, blob: BlobVersion): boolean {
  const ifMatch = conditions['if-match'];
  if (ifMatch !== undefined) {
    return ifMatch
      .split(',')
      .map((tag) => tag.trim())
      .some((tag) => tag === '*' || tag === `"${blob.md5}"`);
  }
  const since = Date.parse(conditions['if-unmodified-since'] ?? '');
  return Number.isNaN(since) || Math.floor(blob.modifiedAt.getTime() / 1000) <= Math.floor(since / 1000);
}

function preconditionFailed(blob: BlobVersion): ApiError {
  return new ApiError(412, 'conflict', 'The file has changed: it is no longer the version If-Match or If-Unmodified-Since names. The ETag header names the current one.', undefined, versionHeaders(blob));
}

/**
 * RFC 9110 13.2.2, steps 3 and 4: If-None-Match matches the ETag, or without it If-Modified-Since is a valid date, not
 * in the future (13.1.3), and the file was not modified after it (to the second). Caches and tools such as `curl -z`
 * and `wget -N` revalidate with the date alone.
 */
function notModified(conditions: BlobConditions, blob: BlobVersion, now: Date): boolean {
  if (conditions['if-none-match'] !== undefined) return etagMatches(conditions['if-none-match'], `"${blob.md5}"`);
  const since = Date.parse(conditions['if-modified-since'] ?? '');
  if (Number.isNaN(since) || since > now.getTime()) return false;
  return Math.floor(blob.modifiedAt.getTime() / 1000) <= Math.floor(since / 1000);
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}

/**
 * One `bytes=` range (first-last, first-, or -suffix); the unit in any case, as RFC 9110 compares range units. A
 * header this parser does not understand, or several ranges, is ignored (the whole file is sent), as RFC 9110 allows.
 */
export function parseRange(header: string, size: number): ByteRange | 'unsatisfiable' | null {
  const match = /^bytes=(\d*)-(\d*)$/i.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return null;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0) return 'unsatisfiable';
    // RFC 9110 14.1.2: the one range an empty file satisfies, and one no Content-Range can state: the whole (empty) file.
    return size === 0 ? null : { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (!Number.isSafeInteger(start) || start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}

/** RFC 6266: an ASCII fallback plus the exact UTF-8 name. */
export function contentDisposition(type: 'attachment' | 'inline', fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${type}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
