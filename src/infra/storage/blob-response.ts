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
 * Streams a blob as an HTTP response the way a mature file API does: strong ETag (the MD5) with
 * If-None-Match (304), a single byte range (206, or 416 when unsatisfiable; If-Range honoured),
 * HEAD, and a Content-Disposition that survives any file name. Memory stays flat: bytes are piped.
 */
export async function sendBlob(request: Request, response: Response, storage: BlobStorage, blob: BlobDescription): Promise<void> {
  const etag = `"${blob.md5}"`;
  response.setHeader('ETag', etag);
  response.setHeader('Accept-Ranges', 'bytes');
  response.setHeader('Last-Modified', blob.modifiedAt.toUTCString());
  response.setHeader('Cache-Control', 'private, max-age=0, must-revalidate');
  response.setHeader('X-Content-Type-Options', 'nosniff');

  if (etagMatches(request.headers['if-none-match'], etag)) {
    response.status(304).end();
    return;
  }

  const rangeHeader = request.headers.range;
  const ifRange = request.headers['if-range'];
  const rangeApplies = rangeHeader !== undefined && (ifRange === undefined || ifRange === etag);
  const range = rangeApplies ? parseRange(rangeHeader, blob.size) : null;
  if (range === 'unsatisfiable') {
    response.setHeader('Content-Range', `bytes */${blob.size}`);
    throw new ApiError(416, 'invalid_request', `The requested range is not satisfiable for a ${blob.size}-byte file.`, { size: blob.size });
  }

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

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}

/**
 * One `bytes=` range (first-last, first-, or -suffix). A header this parser does not understand,
 * or several ranges, is ignored (the whole file is sent), as RFC 9110 allows.
 */
export function parseRange(header: string, size: number): ByteRange | 'unsatisfiable' | null {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return null;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0) return 'unsatisfiable';
    return size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size - 1 };
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
