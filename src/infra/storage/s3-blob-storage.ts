import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { Logger } from '@nestjs/common';
import { Readable } from 'node:stream';
import { assertSafeKey, BlobStorage, blobKeys, BlobStoreUnavailable, type ByteRange } from './blob-storage.js';

/** A key that is never written: asking for it shows whether the bucket answers. */
const HEALTH_PROBE_KEY = 'health-probe';
/** Parts of a streamed upload; lib-storage holds at most PART_SIZE x QUEUE_SIZE bytes in memory. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 4;
/** CopyObject handles up to 5 GiB; larger blobs are copied part by part. */
const SINGLE_COPY_LIMIT = 5 * 1024 ** 3;
const COPY_PART_SIZE = 512 * 1024 * 1024;
/**
 * How long a request without a body (head, get, delete, list) may wait for the answer's headers before it is retried
 * (the SDK tries 3 times) and finally answered 503: a bucket that takes connections but never answers would otherwise
 * hold every download open for good.
 */
const ANSWER_WITHIN = { requestTimeout: 10_000 };
/** Requests that carry a part of an upload (up to PART_SIZE) get this long: at least 140 KB/s to the bucket. */
const PART_REQUEST_TIMEOUT_MS = 60_000;
const CONNECT_TIMEOUT_MS = 5_000;
/** A server-side copy may answer only once it is done (AWS answers at once, MinIO when copied): 10 MB/s at least. */
/** How long any S3 request may take to connect and to answer, for blobs and resumable uploads' parts alike. */
export const S3_REQUEST_TIMEOUTS = { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: PART_REQUEST_TIMEOUT_MS, throwOnRequestTimeout: true };
const copyWithin = (bytes: number) => ({ requestTimeout: Math.max(PART_REQUEST_TIMEOUT_MS, Math.ceil(bytes / 10_000)) });

export interface S3Settings {
  bucket: string;
  endpoint?: string;
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
}

/**
 * Blobs as objects in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2...). Writes stream through
 * a multipart upload, so memory stays bounded whatever the file size; a failed write aborts the
 * multipart upload so no parts linger.
 */
export class S3BlobStorage extends BlobStorage {
  private readonly logger = new Logger('S3BlobStorage');
  readonly client: S3Client;
  private readonly bucket: string;

  constructor(settings: S3Settings) {
    super();
    this.bucket = settings.bucket;
    this.client = new S3Client({
      endpoint: settings.endpoint,
      region: settings.region ?? 'us-east-1',
      forcePathStyle: settings.forcePathStyle,
      requestHandler: S3_REQUEST_TIMEOUTS,
      credentials:
        settings.accessKeyId && settings.secretAccessKey ? { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } : undefined,
    });
  }

  async write(key: string, source: Readable): Promise<void> {
    assertSafeKey(key);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: source },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (error) {
      await upload.abort().catch(() => undefined);
      await this.delete(key).catch(() => undefined);
      // A source that failed (a client gone, an upload refused) is its own story; anything else is the bucket's.
      throw source.errored ? error : this.failure(error);
    }
  }

  async move(fromKey: string, toKey: string): Promise<void> {
    assertSafeKey(fromKey);
    assertSafeKey(toKey);
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: fromKey }), ANSWER_WITHIN);
      const size = head.ContentLength ?? 0;
      const copySource = `${this.bucket}/${fromKey}`;
      if (size <= SINGLE_COPY_LIMIT) {
        await this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: toKey, CopySource: copySource }), copyWithin(size));
      } else {
        await this.copyInParts(copySource, toKey, size);
      }
    } catch (error) {
      throw this.failure(error);
    }
    // Written whole (it was just copied): no unfinished write to look for, as delete would.
    await this.deleteObject(fromKey);
  }

  private async copyInParts(copySource: string, toKey: string, size: number): Promise<void> {
    const { UploadId } = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: toKey }), ANSWER_WITHIN);
    try {
      const parts: Array<{ ETag: string; PartNumber: number }> = [];
      for (let start = 0, part = 1; start < size; start += COPY_PART_SIZE, part++) {
        const end = Math.min(start + COPY_PART_SIZE, size) - 1;
        const result = await this.client.send(
          new UploadPartCopyCommand({ Bucket: this.bucket, Key: toKey, UploadId, PartNumber: part, CopySource: copySource, CopySourceRange: `bytes=${start}-${end}` }),
          copyWithin(end - start + 1),
        );
        parts.push({ ETag: result.CopyPartResult?.ETag ?? '', PartNumber: part });
      }
      await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: toKey, UploadId, MultipartUpload: { Parts: parts } }), ANSWER_WITHIN);
    } catch (error) {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: toKey, UploadId }), ANSWER_WITHIN).catch(() => undefined);
      throw error;
    }
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    assertSafeKey(key);
    const result = await this.client
      .send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }), ANSWER_WITHIN)
      .catch((error: unknown) => {
        throw this.failure(error);
      });
    if (!(result.Body instanceof Readable)) throw new Error(`S3 returned no stream for ${key}`);
    if (!range) return result.Body;
    const wanted = range.end - range.start + 1;
    // Where the answer starts: a store may answer more than the range asked (HTTP lets a server ignore Range; s3rver
    // answers `bytes=0-0` with the whole object), and the bytes asked for are then cut out of it.
    const from = result.ContentRange ? Number(/^bytes (\d+)-/.exec(result.ContentRange)?.[1] ?? NaN) : 0;
    const length = result.ContentLength ?? 0;
    if (!(from <= range.start && from + length > range.end)) {
      result.Body.destroy();
      throw new Error(`Blob ${key} ends before byte ${range.end}`);
    }
    if (from === range.start && length === wanted) return result.Body;
    return Readable.from(bytesOf(result.Body, range.start - from, wanted), { objectMode: false });
  }

  async delete(key: string): Promise<void> {
    assertSafeKey(key);
    if (blobKeys.isTemp(key)) await this.abortUnfinishedWrites(key);
    await this.deleteObject(key);
  }

  private async deleteObject(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), ANSWER_WITHIN).catch((error: unknown) => {
      throw this.failure(error);
    });
  }

  /**
   * Aborts the multipart uploads still open at `key`: a process killed mid-upload cannot abort its own, and their parts
   * are no object, so neither deleting the key nor any listing would ever find them (they stay, billed, for good).
   */
  private async abortUnfinishedWrites(key: string): Promise<void> {
    try {
      const open = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: key }), ANSWER_WITHIN);
      for (const upload of open.Uploads ?? []) {
        if (upload.Key !== key || !upload.UploadId) continue;
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: upload.UploadId }), ANSWER_WITHIN).catch((error: unknown) => {
          // Completed or aborted meanwhile.
          if (!isNotFound(error)) throw error;
        });
      }
    } catch (error) {
      // A store without ListMultipartUploads (501 NotImplemented, as s3rver) leaves them to the bucket's lifecycle rule (docs/files.md).
      if (statusOf(error) === 501) return;
      throw this.failure(error);
    }
  }

  override async stat(key: string): Promise<{ size: number } | null> {
    assertSafeKey(key);
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }), ANSWER_WITHIN);
      return { size: head.ContentLength ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw this.failure(error);
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async check(): Promise<void> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: HEALTH_PROBE_KEY }), ANSWER_WITHIN);
    } catch (error) {
      // Any answer of the bucket but a server error means it is there: a missing key (404), or a key that
      // may write but not list (403). Only no answer or a 5xx is a store that is down.
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === undefined || status >= 500) throw error;
    }
  }

  async *list(prefix: string): AsyncIterable<{ key: string; lastModified: Date }> {
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }), ANSWER_WITHIN).catch((error: unknown) => {
        throw this.failure(error);
      });
      for (const object of page.Contents ?? []) {
        if (object.Key) yield { key: object.Key, lastModified: object.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  private failure(error: unknown): unknown {
    return s3Failure(error, this.logger);
  }
}

/**
 * A failed S3 call as the caller should see it: no answer, a 5xx, throttling or refused credentials are the bucket
 * being unavailable; any other refusal (a missing object, a range past a damaged object's end) is passed on as it is.
 * Resumable uploads' S3 calls go through it too.
 */
export function s3Failure(error: unknown, logger: Logger): unknown {
  const status = (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
  const unavailable = status === undefined || status >= 500 || [401, 403, 408, 429].includes(status);
  if (!unavailable || isNotFound(error) || error instanceof BlobStoreUnavailable) return error;
  logger.warn({ err: error }, 'The S3 bucket failed a request');
  return new BlobStoreUnavailable(error);
}

/** `take` bytes of `body` after its first `skip`; the rest of `body` is not read. */
async function* bytesOf(body: Readable, skip: number, take: number): AsyncIterable<Buffer> {
  for await (const chunk of body) {
    let bytes = chunk as Buffer;
    if (skip > 0) {
      const skipped = Math.min(skip, bytes.length);
      bytes = bytes.subarray(skipped);
      skip -= skipped;
    }
    if (bytes.length === 0) continue;
    if (bytes.length >= take) {
      // Leaving the loop destroys `body`.
      yield bytes.subarray(0, take);
      return;
    }
    take -= bytes.length;
    yield bytes;
  }
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

/** S3's answer for a key, or a multipart upload (NoSuchUpload), that is not there. */
export function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
}
