import type { Part } from '@aws-sdk/client-s3';
import { Logger } from '@nestjs/common';
import { type MetadataValue, S3Store } from '@tus/s3-store';
import { ERRORS, StreamSplitter, type Upload } from '@tus/utils';
import { randomBytes } from 'node:crypto';
import { createReadStream, type ReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { blobKeys } from '../../../infra/storage/blob-storage.js';
import { isNotFound, S3_REQUEST_TIMEOUTS, s3Failure, type S3Settings } from '../../../infra/storage/s3-blob-storage.js';
import { ResumableUploadPartEntity } from '../resumable-upload-part.entity.js';
import type { ResumableUploadEntity } from '../resumable-upload.entity.js';
import type { ResumableUploadRows } from '../resumable-upload.store.js';
import { makePartStagingDir } from './part-staging.js';
import type { UploadBytes } from './upload-bytes.js';

/** S3 parts of 8 MiB (the minimum is 5 MiB): at most 1,280 parts for a 10 GiB file, well under S3's 10,000. */
const PART_SIZE = 8 * 1024 * 1024;
/** Sizes an upload of unknown length (Upload-Defer-Length) as the largest file a plan allows. */
const LARGEST_FILE = 10 * 1024 ** 3;
/** Parts uploading at once, across all uploads of this process; each is staged on disk (makePartStagingDir) first. */
const CONCURRENT_PARTS = 8;

/**
 * STORAGE_DRIVER=s3: @tus/s3-store, so each upload is one S3 multipart upload at its temporary key
 * `tmp/<upload id>`. A PATCH's bytes are cut into 8 MiB parts, each staged in a temporary file
 * (never in memory) and sent as an UploadPart; bytes left over at the end of a PATCH, too few for a
 * part (S3's minimum is 5 MiB), are kept as one small object (`tus-parts/<upload id>`) and put in
 * front of the next PATCH's bytes. The last PATCH completes the multipart upload, which leaves the
 * whole file at the temporary key for the multipart upload's commit.
 *
 * Our database replaces the store's `.info` objects and S3's ListParts: the resumable_uploads row
 * holds the multipart upload id and the length, and resumable_upload_parts the parts stored, so
 * every process knows the offset from one place (and S3-compatible servers without ListParts work).
 */
export class S3UploadBytes extends S3Store implements UploadBytes {
  readonly readsUnfinished = false;
  private readonly logger = new Logger('S3UploadBytes');
  private stagingDir: Promise<string> | null = null;

  constructor(
    settings: S3Settings,
    private readonly rows: ResumableUploadRows,
    private readonly transactions: Transactions,
  ) {
    super({
      partSize: PART_SIZE,
      maxConcurrentPartUploads: CONCURRENT_PARTS,
      // Expiry is ours (ResumableUploadExpiry), so no object tags either.
      expirationPeriodInMilliseconds: 0,
      useTags: false,
      s3ClientConfig: {
        bucket: settings.bucket,
        endpoint: settings.endpoint,
        region: settings.region ?? 'us-east-1',
        forcePathStyle: settings.forcePathStyle,
        requestHandler: S3_REQUEST_TIMEOUTS,
        // Streamed parts otherwise go out aws-chunked with a trailing CRC, which S3-compatible servers (s3rver, older MinIO, Ceph) store as is.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        credentials:
          settings.accessKeyId && settings.secretAccessKey ? { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } : undefined,
      },
    });
  }

  // The store names S3 objects after the ids it is given: it is given temporary keys.

  override async create(upload: Upload): Promise<Upload> {
    const id = upload.id;
    upload.id = blobKeys.temp(id);
    try {
      return await super.create(upload);
    } catch (error) {
      throw this.failure(error);
    } finally {
      upload.id = id;
    }
  }

  override async write(source: Readable, id: string, offset: number): Promise<number> {
    try {
      return await super.write(source, blobKeys.temp(id), offset);
    } catch (error) {
      // A source that failed (the client gone, a limit refused while the bytes streamed) is its own story.
      throw source.errored ? error : this.failure(error);
    }
  }

  override async getUpload(id: string): Promise<Upload> {
    const upload = await super.getUpload(blobKeys.temp(id)).catch((error: unknown) => {
      throw this.failure(error);
    });
    upload.id = id;
    return upload;
  }

  /** The length is recorded by ResumableUploadStore; nothing to add in S3. */
  override async declareUploadLength(): Promise<void> {}

  /**
   * Aborts the multipart upload (S3 then drops its parts) and deletes the staged incomplete part. A bucket that fails
   * either rejects (503): the caller keeps the upload to try again, since nothing else would ever find these bytes.
   */
  async discard(upload: ResumableUploadEntity): Promise<void> {
    // Its creation failed before S3 made a multipart upload: nothing of it is in the bucket.
    if (upload.storageUploadId) {
      const key = blobKeys.temp(upload.id);
      try {
        await this.client.abortMultipartUpload({ Bucket: this.bucket, Key: key, UploadId: upload.storageUploadId }).catch((error: unknown) => {
          // Completed (the object is then the temporary blob, which BlobStorage removes) or aborted already.
          if (!isNotFound(error)) throw error;
        });
        await this.deleteIncompletePart(key);
      } catch (error) {
        throw this.failure(error);
      }
    }
    await this.transactions.run((tx) => tx.getRepository(ResumableUploadPartEntity).delete({ uploadId: upload.id }));
  }

  protected override partKey(key: string, isIncomplete = false): string {
    return isIncomplete ? blobKeys.incompletePart(uploadIdOf(key)) : key;
  }

  protected override async saveMetadata(upload: Upload, storageUploadId: string): Promise<void> {
    await this.rows.recordStorageUpload(uploadIdOf(upload.id), storageUploadId);
  }

  protected override async getMetadata(key: string): Promise<MetadataValue> {
    const row = await this.rows.find(uploadIdOf(key));
    if (!row?.storageUploadId) throw ERRORS.FILE_NOT_FOUND;
    const file = this.rows.upload(row);
    file.id = key;
    return { file, 'upload-id': row.storageUploadId, 'tus-version': '1.0.0' };
  }

  protected override async uploadPart(metadata: MetadataValue, body: Readable | Buffer, partNumber: number): Promise<string> {
    const etag = await super.uploadPart(metadata, body, partNumber);
    // The store hands over a staged part file (read whole by now) or, for an empty upload, an empty buffer.
    const size = Buffer.isBuffer(body) ? body.length : (body as ReadStream).bytesRead;
    const uploadId = uploadIdOf(metadata.file.id);
    await this.transactions.run(async (tx) => {
      const parts = tx.getRepository(ResumableUploadPartEntity);
      // A part sent again (after a failed PATCH) replaces the one S3 has under its number.
      await parts.delete({ uploadId, partNumber });
      await parts.insert({ uploadId, partNumber, etag, size });
    });
    return etag;
  }

  /** The parts stored, numbered 1, 2, 3... without a gap (a part after a gap was cut off by a failure and is sent again). */
  protected override async retrieveParts(key: string): Promise<Part[]> {
    const stored = await this.transactions.dataSource
      .getRepository(ResumableUploadPartEntity)
      .find({ where: { uploadId: uploadIdOf(key) }, order: { partNumber: 'ASC' } });
    const parts: Part[] = [];
    for (const part of stored) {
      if (part.partNumber !== parts.length + 1) break;
      parts.push({ PartNumber: part.partNumber, ETag: part.etag, Size: part.size });
    }
    return parts;
  }

  /**
   * As @tus/s3-store's own, but each part is staged in this process's staging dir: the store's are named at random
   * straight under os.tmpdir(), where nothing can tell a killed process's parts from any other program's files.
   */
  protected override async uploadParts(metadata: MetadataValue, readStream: Readable, currentPartNumber: number, offset: number): Promise<number> {
    const size = metadata.file.size;
    const uploads: Array<Promise<void>> = [];
    let staging: string | null = null;
    let bytesUploaded = 0;
    let permit: { release(): Promise<void> } | undefined;
    const splitter = new StreamSplitter({ chunkSize: this.calcOptimalPartSize(size), directory: await this.staging() })
      .on('beforeChunkStarted', async () => {
        permit = await this.partUploadSemaphore.acquire();
        // The PATCH failed while this waited for its turn; the splitter only finishes the write it was in. Throwing
        // here keeps it from staging a file that nothing would remove, and the turn from being held for good.
        if (splitter.destroyed) {
          await permit.release();
          throw new Error('The PATCH failed before its part could be staged');
        }
      })
      .on('chunkStarted', (path: string) => {
        staging = path;
        // The PATCH failed between its turn and the file's opening: the same as above.
        if (splitter.destroyed) {
          void rm(path, { force: true });
          void permit?.release().catch(() => undefined);
        }
      })
      .on('chunkFinished', ({ path, size: partSize }: { path: string; size: number }) => {
        staging = null;
        const held = permit;
        // A part finished by that last write after the PATCH failed is not sent: its bytes are past the offset answered.
        if (splitter.destroyed) {
          void rm(path, { force: true }).finally(() => held?.release().catch(() => undefined));
          return;
        }
        const partNumber = currentPartNumber++;
        offset += partSize;
        const upload = (async () => {
          try {
            const readable = createReadStream(path);
            if (partSize >= this.minPartSize || offset === size) await this.uploadPart(metadata, readable, partNumber);
            else await this.uploadIncompletePart(metadata.file.id, readable);
            bytesUploaded += partSize;
          } catch (error) {
            // Named before it tears down the PATCH's stream with it: the stream's failure then reads as the bucket's
            // (503), not as the client's, which would be passed on as it is (500). No part after a failed one: the
            // offset is the parts stored without a gap.
            const failure = this.failure(error) as Error;
            splitter.destroy(failure);
            throw failure;
          } finally {
            await rm(path, { force: true });
            await held?.release().catch(() => undefined);
          }
        })();
        upload.catch(() => undefined);
        uploads.push(upload);
      })
      .on('chunkError', () => void permit?.release().catch(() => undefined));
    try {
      await pipeline(readStream, splitter);
    } catch (error) {
      if (staging !== null) await rm(staging, { force: true });
      uploads.push(Promise.reject(error));
    } finally {
      // Every part upload ends before the PATCH does, failed or not; then the first failure is the PATCH's.
      await Promise.allSettled(uploads);
    }
    await Promise.all(uploads);
    return bytesUploaded;
  }

  /** The incomplete part from the previous PATCH is downloaded to the staging dir too. */
  protected override async uniqueTmpFileName(template: string): Promise<string> {
    return join(await this.staging(), `${template}${randomBytes(8).toString('hex')}`);
  }

  private async staging(): Promise<string> {
    this.stagingDir ??= makePartStagingDir().catch((error: unknown) => {
      this.stagingDir = null;
      throw error;
    });
    const dir = await this.stagingDir;
    // A temp cleaner (systemd-tmpfiles, tmpreaper) may have removed it while the server idled.
    await mkdir(dir, { recursive: true });
    return dir;
  }

  protected override calcOptimalPartSize(size?: number): number {
    return super.calcOptimalPartSize(size ?? LARGEST_FILE);
  }

  /** An unreachable or failing bucket is a 503 (s3Failure); our refusals and @tus/server's ({status_code, body}) pass as they are. */
  private failure(error: unknown): unknown {
    if (error instanceof ApiError || (typeof error === 'object' && error !== null && 'status_code' in error)) return error;
    return s3Failure(error, this.logger);
  }
}

function uploadIdOf(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1);
}
