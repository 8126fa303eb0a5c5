import { type BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { In } from 'typeorm';
import { Transactions } from '../../../infra/database/transactions.js';
import { BlobStorage } from '../../../infra/storage/blob-storage.js';
import { FileEntity } from '../file.entity.js';
import { UploadReservationEntity } from './upload-reservation.entity.js';

/** An upload whose blob is at its final key: the file row that should name it. */
export interface PlacedUpload {
  uploadId: string;
  fileId: string;
  blobKey: string;
}

/** Finished reservations wait at most this long to be removed, together with the others finished meanwhile. */
const FLUSH_AFTER_MS = 25;
/** Ids per DELETE: well below SQLite's and PostgreSQL's parameter limits. */
const IDS_PER_STATEMENT = 500;

/**
 * The work a committed upload leaves once its blob is in place, done after the answer: the blobs an
 * overwrite replaced are deleted, then the upload's reservation row (which names them, and the file,
 * for the sweeper) goes, batched with those of other uploads into one DELETE. If the process dies
 * first, the row is still there and the upload sweeper finishes the same work (idempotently).
 *
 * A file deleted for good (or overwritten again) between its commit and its blob's move had its blob
 * deleted before the blob was there; so each batch looks the files up once their blobs are in place,
 * and deletes a blob its file no longer names.
 */
@Injectable()
export class FinishedUploads implements BeforeApplicationShutdown {
  private readonly logger = new Logger('FinishedUploads');
  private pending: PlacedUpload[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
  ) {}

  /** Called once the upload's blob is at its final key (`placed`); never throws, never delays the answer. */
  afterAnswer(placed: PlacedUpload, replacedBlobs: string[]): void {
    if (replacedBlobs.length === 0) return this.forget(placed);
    void Promise.all(replacedBlobs.map((key) => this.storage.delete(key))).then(
      () => this.forget(placed),
      // The row stays: the sweeper retries the deletion and removes it then.
      (error: unknown) => this.logger.warn({ err: error, uploadId: placed.uploadId }, 'Could not delete a replaced blob; the upload sweeper will retry'),
    );
  }

  private forget(placed: PlacedUpload): void {
    this.pending.push(placed);
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_AFTER_MS);
  }

  /** Deletes the blobs of these uploads that their files no longer name (deleted or overwritten since their commit). */
  private async deleteOrphans(uploads: PlacedUpload[]): Promise<void> {
    const files: Array<{ id: string; blob_key: string }> = await this.transactions.dataSource
      .createQueryBuilder()
      .select(['id', 'blob_key'])
      .from(FileEntity, 'f')
      .where('f.id IN (:...ids)', { ids: uploads.map((upload) => upload.fileId) })
      .getRawMany();
    const named = new Set(files.map((file) => file.blob_key));
    const orphans = uploads.filter((upload) => !named.has(upload.blobKey)).map((upload) => upload.blobKey);
    await Promise.all(orphans.map((key) => this.storage.delete(key)));
  }

  /** Removes every finished reservation collected so far. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const uploads = this.pending;
    this.pending = [];
    if (uploads.length === 0) return this.flushing;
    this.flushing = this.flushing.then(async () => {
      for (let i = 0; i < uploads.length; i += IDS_PER_STATEMENT) {
        const placed = uploads.slice(i, i + IDS_PER_STATEMENT);
        const batch = placed.map((upload) => upload.uploadId);
        // Before the rows go: if this fails, the sweeper finds the rows and checks the files itself.
        const checked = await this.deleteOrphans(placed).then(
          () => true,
          (error: unknown) => (this.logger.warn({ err: error, uploads: placed.length }, 'Could not check finished uploads against their files; the sweeper will'), false),
        );
        if (!checked) continue;
        await this.transactions
          .run((tx) => tx.getRepository(UploadReservationEntity).delete({ id: In(batch) }))
          .catch((error: unknown) => this.logger.warn({ err: error, uploads: batch.length }, 'Could not remove finished upload reservations; the sweeper will'));
      }
    });
    return this.flushing;
  }

  /** Before the database closes (onApplicationShutdown). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.flush();
  }
}
