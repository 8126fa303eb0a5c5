import { Injectable, Logger } from '@nestjs/common';
import { Interval, Timeout } from '@nestjs/schedule';
import { Brackets, type EntityManager } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { InstanceHeartbeat } from '../../../infra/instances/instance-heartbeat.js';
import { BlobDeletions } from '../../../infra/storage/blob-deletions.js';
import { BlobStorage, blobKeys } from '../../../infra/storage/blob-storage.js';
import { FileEntity } from '../file.entity.js';
import { UploadReceiver } from './upload-receiver.js';
import { UploadReservationEntity } from './upload-reservation.entity.js';

/**
 * An upload that has not reserved anything for this long is dead even if its process still beats
 * (it hung), and so is a temporary blob this old that no reservation owns.
 */
export const STALE_UPLOAD_MS = 60 * 60 * 1000;

/** How often reservations of dead processes are looked for: one indexed query. */
const DEAD_PROCESS_CHECK_MS = 5_000;

/**
 * Gives back what crashed uploads held. A reservation is abandoned when its process is dead (no
 * heartbeat for 3 beats, see InstanceHeartbeat) or when it has not been touched for an hour (a live
 * upload touches its row every few MiB). An abandoned reservation that never committed is released
 * (quota given back, temporary bytes removed); one whose file row committed has its blob moved into
 * place and the blobs it replaced deleted. Temporary blobs no reservation owns are removed once stale, and blobs of
 * deleted files whose deletion failed (BlobDeletions) are deleted again.
 * Runs in the server only (not in the CLI): dead processes every 5 s, everything at start and every 10 minutes.
 */
@Injectable()
export class UploadSweeper {
  private readonly logger = new Logger('UploadSweeper');

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
    private readonly blobDeletions: BlobDeletions,
    private readonly receiver: UploadReceiver,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  @Timeout(1_000)
  @Interval(10 * 60 * 1000)
  async sweepInBackground(): Promise<void> {
    await this.sweep().catch((error: unknown) => this.logger.error({ err: error }, 'Upload sweep failed'));
  }

  @Interval(DEAD_PROCESS_CHECK_MS)
  async reclaimUploadsOfDeadProcesses(): Promise<void> {
    await this.reclaimAbandonedReservations().catch((error: unknown) => this.logger.error({ err: error }, 'Upload reclaim failed'));
  }

  async sweep(staleMs = STALE_UPLOAD_MS): Promise<{ reservations: number; blobs: number }> {
    const reservations = await this.reclaimAbandonedReservations(staleMs);
    const cutoff = new Date(this.clock.now().getTime() - staleMs);
    let blobs = 0;
    const live = new Set(
      (await this.transactions.run((tx) => tx.getRepository(UploadReservationEntity).find({ select: { tempKey: true } }))).map((r) => r.tempKey),
    );
    for await (const blob of this.storage.list('tmp/')) {
      if (blob.lastModified < cutoff && !live.has(blob.key)) {
        if (await this.finishCommittedMove(blob.key)) continue;
        await this.storage.delete(blob.key);
        blobs++;
      }
    }
    if (blobs > 0) this.logger.warn({ blobs }, 'Removed temporary blobs no upload owned');
    await this.blobDeletions.retryPending(this.clock.now()).catch((error: unknown) => this.logger.warn({ err: error }, 'Deleting blobs of deleted files failed again'));
    return { reservations, blobs };
  }

  /** Releases or finishes every abandoned reservation; returns how many there were. */
  async reclaimAbandonedReservations(staleMs = STALE_UPLOAD_MS): Promise<number> {
    const now = this.clock.now();
    const staleBefore = new Date(now.getTime() - staleMs).toISOString();
    const deadBefore = InstanceHeartbeat.deadBefore(now, this.config.instanceHeartbeatMs).toISOString();
    const abandoned = await this.transactions.run((tx: EntityManager) =>
      tx
        .getRepository(UploadReservationEntity)
        .createQueryBuilder('r')
        .leftJoin('server_instances', 'i', 'i.id = r.instance_id')
        .where(
          new Brackets((abandonedOrHung) =>
            abandonedOrHung
              .where('r.updated_at < :staleBefore', { staleBefore })
              .orWhere('(r.instance_id IS NOT NULL AND (i.id IS NULL OR i.heartbeat_at < :deadBefore))', { deadBefore }),
          ),
        )
        // A resumable upload outlives its requests and processes until it expires (modules/uploads); once its file commits it is swept as any.
        .andWhere('(r.file_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM resumable_uploads ru WHERE ru.id = r.id))')
        .getMany(),
    );
    for (const reservation of abandoned) {
      if (reservation.fileId) await this.finishCommittedUpload(reservation);
      else await this.receiver.release(reservation.id, reservation.tempKey);
    }
    if (abandoned.length > 0) this.logger.warn({ reservations: abandoned.length }, 'Reclaimed uploads whose process died or hung');
    return abandoned.length;
  }

  /**
   * A committed upload whose blob this process could not move (the store failed): handed to the reclaim that runs every
   * few seconds, which retries the move until the store is back, instead of to the hourly staleness check. Marked as a
   * reservation untouched since long ago, which is what that reclaim looks for.
   */
  async finishSoon(uploadId: string): Promise<void> {
    await this.transactions.run((tx) => tx.getRepository(UploadReservationEntity).update({ id: uploadId }, { updatedAt: new Date(0) }));
  }

  /**
   * The file row committed but its process died before the blob moved or the replaced blobs went:
   * move the bytes to the key the row names (unless the file has moved on to another version since,
   * which makes these bytes garbage), delete the replaced blobs, and drop the reservation.
   */
  private async finishCommittedUpload(reservation: UploadReservationEntity): Promise<void> {
    const finalKey = blobKeys.file(reservation.accountId, reservation.fileId!, reservation.id);
    const file = await this.transactions.run((tx) => tx.getRepository(FileEntity).findOneBy({ id: reservation.fileId! }));
    if (await this.storage.exists(reservation.tempKey)) {
      if (file?.blobKey === finalKey) await this.storage.move(reservation.tempKey, finalKey);
      else await this.storage.delete(reservation.tempKey);
    }
    // Moved already, but the file was deleted or overwritten since: no row will ever name these bytes.
    if (file?.blobKey !== finalKey) await this.storage.delete(finalKey);
    for (const key of JSON.parse(reservation.obsoleteBlobKeys ?? '[]') as string[]) await this.storage.delete(key);
    await this.transactions.run((tx) => tx.getRepository(UploadReservationEntity).delete({ id: reservation.id }));
    this.logger.warn({ fileId: reservation.fileId, blobKey: finalKey }, 'Finished an upload whose process stopped after it committed');
  }

  /**
   * A temporary blob whose file row committed before reservations outlived the commit (rows from
   * an older version of the service): moved to the final key the row names instead of being lost.
   */
  private async finishCommittedMove(tempKey: string): Promise<boolean> {
    const uploadId = tempKey.slice('tmp/'.length);
    const file = await this.transactions.run((tx) =>
      tx.getRepository(FileEntity).createQueryBuilder('file').where('file.blob_key LIKE :suffix', { suffix: `files/%${uploadId}` }).getOne(),
    );
    if (!file || (await this.storage.exists(file.blobKey))) return false;
    await this.storage.move(tempKey, file.blobKey);
    this.logger.warn({ fileId: file.id, blobKey: file.blobKey }, 'Finished moving a committed upload whose process stopped before it could');
    return true;
  }
}
