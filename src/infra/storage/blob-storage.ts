import { Readable } from 'node:stream';
import { ServiceUnavailable } from '../../common/errors/api-error.js';

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

/**
 * Where file bytes live. Keys are built from ids only (see `blobKeys`), never from user input,
 * so no name can reach outside the store. Adapters: local directory, S3-compatible.
 */
export abstract class BlobStorage {
  /** Streams `source` into `key`. On any error nothing is left at `key` and the promise rejects. */
  abstract write(key: string, source: Readable): Promise<void>;
  /** Stores `bytes` (a small blob, already in memory) at `key`; the same guarantees as `write`. */
  writeBytes(key: string, bytes: Buffer): Promise<void> {
    return this.write(key, Readable.from([bytes]));
  }
  /** Makes the bytes at `fromKey` available at `toKey` and removes `fromKey`. */
  abstract move(fromKey: string, toKey: string): Promise<void>;
  /**
   * The bytes at `key` (or a byte range of them) as a stream. Rejects, before any byte, when the blob ends before the
   * range does: blobs never change once written, so a shorter one was damaged outside the service.
   */
  abstract read(key: string, range?: ByteRange): Promise<Readable>;
  /**
   * A byte range of the blob at `key` in one buffer: for a small download, cheaper than a stream and its
   * pipeline. Callers keep the range small; this fallback collects the stream.
   */
  async readBytes(key: string, range: ByteRange): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of await this.read(key, range)) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    // Blobs never change once written: fewer bytes than asked for means the blob was damaged outside the service.
    if (bytes.length !== range.end - range.start + 1) throw new Error(`Blob ${key} ends before byte ${range.end}`);
    return bytes;
  }
  /** Removes `key`; removing a missing key is not an error. */
  abstract delete(key: string): Promise<void>;
  abstract exists(key: string): Promise<boolean>;
  /**
   * Size of the blob at `key`, or null when there is none. Adapters answer from metadata; this
   * fallback counts the bytes, which is fine for small blobs such as thumbnails.
   */
  async stat(key: string): Promise<{ size: number } | null> {
    if (!(await this.exists(key))) return null;
    let size = 0;
    for await (const chunk of await this.read(key)) size += (chunk as Buffer).length;
    return { size };
  }
  /** Every key that starts with `prefix` (which may end inside a name), with its last modification, for sweeping orphans. */
  abstract list(prefix: string): AsyncIterable<{ key: string; lastModified: Date }>;
  /** Resolves when the store can take blobs now (for /health); rejects with the reason otherwise. */
  abstract check(): Promise<void>;
}

/**
 * The store failed (S3 unreachable or answering an error, a disk full or read-only): the client's request was fine
 * and may be retried, so it is answered 503 with Retry-After, never 500 or a 400 that blames the request.
 * A blob that is simply not there is not this: adapters pass that on as it is.
 */
export class BlobStoreUnavailable extends ServiceUnavailable {
  constructor(cause: unknown) {
    super('The file store is unavailable; retry in a moment.');
    this.cause = cause;
  }
}

const SAFE_KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_.-]+)*$/;

/** Refuses any key that is not made of safe segments (no `..`, no absolute paths, no odd bytes). */
export function assertSafeKey(key: string): void {
  if (!SAFE_KEY.test(key) || key.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new Error(`Unsafe blob key: ${JSON.stringify(key)}`);
  }
}

/**
 * The directory an account's blobs of one file live in: the file id's last two hex digits (random in its uuidv7),
 * so an account's files spread over at most 256 directories, each made once, instead of a directory made for every
 * file and left behind, empty, when the file goes.
 */
const shardOf = (fileId: string) => fileId.slice(-2);

/**
 * The key layout, in one place. Rows keep the key their blob was stored under: keys written before the shards
 * (`files/{account}/{file}/{version}`, `thumbnails/{account}/{file}/{version}.webp`) stay valid.
 */
export const blobKeys = {
  /** Bytes still streaming in, not yet committed to a file row. */
  temp: (uploadId: string) => `tmp/${uploadId}`,
  /** Whether `key` is a temporary blob's (see `temp`). */
  isTemp: (key: string) => key.startsWith('tmp/'),
  /** On S3, a resumable upload's trailing bytes too few for a multipart part yet (outside tmp/: it lives as long as the upload). */
  incompletePart: (uploadId: string) => `tus-parts/${uploadId}`,
  /** A committed file's content; a new key per version (the id of the upload that stored it), so an overwrite never mutates bytes in place. */
  file: (accountId: string, fileId: string, versionId: string) => `files/${accountId}/${shardOf(fileId)}/${fileId}.${versionId}`,
  /** What every version of a file's content (in this layout) starts with. */
  filePrefix: (accountId: string, fileId: string) => `files/${accountId}/${shardOf(fileId)}/${fileId}.`,
  thumbnail: (accountId: string, fileId: string, versionId: string) => `thumbnails/${accountId}/${shardOf(fileId)}/${fileId}.${versionId}.webp`,
  /** What every thumbnail of a file (in this layout) starts with. */
  thumbnailPrefix: (accountId: string, fileId: string) => `thumbnails/${accountId}/${shardOf(fileId)}/${fileId}.`,
  /**
   * Whether `key` is a file's content or thumbnail in the layout before the shards, where each file had a directory to
   * itself that nothing is added to any more: once its last blob is deleted, the empty directory can go too.
   */
  inDirectoryOfItsOwn: (key: string) => /^(files|thumbnails)\/[^/]+\/file_[^/]+\/[^/]+$/.test(key),
  /** The version id of a file's content key, in either layout: its last segment, after the file id when there is one. */
  versionOf: (fileKey: string) => fileKey.slice(Math.max(fileKey.lastIndexOf('/'), fileKey.lastIndexOf('.')) + 1),
};
