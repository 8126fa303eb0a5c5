import { Injectable, Logger } from '@nestjs/common';
import { Interval, Timeout } from '@nestjs/schedule';
import { Clock } from '../../common/clock.js';
import { Transactions } from '../../infra/database/transactions.js';
import { removeOrphanedPartStagingDirs } from './bytes/part-staging.js';
import { RedisUploadLocker, UploadLocked } from './redis-upload-locker.js';
import { ResumableUploadEntity } from './resumable-upload.entity.js';
import { ResumableUploadStore } from './resumable-upload.store.js';
import { removeOrphanedChunkDirs } from './upload-checksum.js';

/**
 * Removes resumable uploads idle past their expiry (TUS_UPLOAD_EXPIRY after their last PATCH): an
 * unfinished one's bytes are deleted and its reserved quota given back; a completed one's row,
 * kept only to answer late HEADs, goes. An upload being written (its lock held) is left alone.
 * Runs in the server only: at start and every ten minutes. At start it also removes what a process killed mid-PATCH
 * left in the temp dir: checksummed chunks set aside, and parts staged for S3.
 */
@Injectable()
export class ResumableUploadExpiry {
  private readonly logger = new Logger('ResumableUploadExpiry');

  constructor(
    private readonly transactions: Transactions,
    private readonly store: ResumableUploadStore,
    private readonly locker: RedisUploadLocker,
    private readonly clock: Clock,
  ) {}

  @Timeout(2_000)
  @Interval(10 * 60 * 1000)
  async expireInBackground(): Promise<void> {
    await this.expire().catch((error: unknown) => this.logger.error({ err: error }, 'Resumable upload expiry failed'));
  }

  @Timeout(2_000)
  async removeOrphanedChunks(): Promise<void> {
    await removeOrphanedChunkDirs().then(
      (removed) => removed > 0 && this.logger.log({ removed }, 'Removed checksummed chunks left set aside by a process that died mid-PATCH'),
      (error: unknown) => this.logger.warn({ err: error }, 'Could not remove checksummed chunks left by dead processes'),
    );
    await removeOrphanedPartStagingDirs().then(
      (removed) => removed > 0 && this.logger.log({ removed }, 'Removed S3 parts left staged by a process that died mid-PATCH'),
      (error: unknown) => this.logger.warn({ err: error }, 'Could not remove S3 parts staged by dead processes'),
    );
  }

  /** Returns how many uploads were removed. */
  async expire(): Promise<number> {
    const expired = await this.findExpired();
    let removed = 0;
    for (const { id } of expired) {
      try {
        removed += await this.locker.holding(id, async () => {
          // Looked at again under the lock: a PATCH may have just moved its expiry on.
          const [upload] = await this.findExpired(id);
          if (!upload) return 0;
          await this.store.forget(upload.id, upload);
          return 1;
        });
      } catch (error) {
        // A bucket out of reach keeps the upload (and what it holds) for the next pass; the others are still removed.
        if (!(error instanceof UploadLocked)) this.logger.warn({ err: error, uploadId: id }, 'Could not remove an expired resumable upload; the next pass tries again');
      }
    }
    if (removed > 0) this.logger.log({ removed }, 'Removed expired resumable uploads');
    return removed;
  }

  private findExpired(id?: string): Promise<ResumableUploadEntity[]> {
    const now = this.clock.now().toISOString();
    return this.transactions.run((tx) => {
      const query = tx.getRepository(ResumableUploadEntity).createQueryBuilder('u').where('u.expires_at < :now', { now });
      if (id) query.andWhere('u.id = :id', { id });
      return query.getMany();
    });
  }
}
