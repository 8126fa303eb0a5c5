import { type BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { In } from 'typeorm';
import { Transactions } from '../../../infra/database/transactions.js';
import { BlobStorage } from '../../../infra/storage/blob-storage.js';
import { UploadReservationEntity } from './upload-reservation.entity.js';

/** Finished reservations wait at most this long to be removed, together with the others finished meanwhile. */
const FLUSH_AFTER_MS = 25;
/** Ids per DELETE: well below SQLite's and PostgreSQL's parameter limits. */
const IDS_PER_STATEMENT = 500;

/**
 * The work a committed upload leaves once its blob is in place, done after the answer: the blobs an
 * overwrite replaced are deleted, then the upload's reservation row (which names them, and the file,
 * for the sweeper) goes, batched with those of other uploads into one DELETE. If the process dies
 * first, the row is still there and the upload sweeper finishes the same work (idempotently).
 */
@Injectable()
export class FinishedUploads implements BeforeApplicationShutdown {
  private readonly logger = new Logger('FinishedUploads');
  private pending: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
  ) {}

  /** Called once the upload's blob is at its final key; never throws, never delays the answer. */
  afterAnswer(uploadId: string, replacedBlobs: string[]): void {
    if (replacedBlobs.length === 0) return this.forget(uploadId);
    void Promise.all(replacedBlobs.map((key) => this.storage.delete(key))).then(
      () => this.forget(uploadId),
      // The row stays: the sweeper retries the deletion and removes it then.
      (error: unknown) => this.logger.warn({ err: error, uploadId }, 'Could not delete a replaced blob; the upload sweeper will retry'),
    );
  }

  private forget(uploadId: string): void {
    this.pending.push(uploadId);
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_AFTER_MS);
  }

  /** Removes every finished reservation collected so far. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const ids = this.pending;
    this.pending = [];
    if (ids.length === 0) return this.flushing;
    this.flushing = this.flushing.then(async () => {
      for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
        const batch = ids.slice(i, i + IDS_PER_STATEMENT);
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
