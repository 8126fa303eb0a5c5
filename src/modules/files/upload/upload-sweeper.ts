import { Injectable, Logger } from '@nestjs/common';
import { Interval, Timeout } from '@nestjs/schedule';
import { LessThan } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { BlobStorage } from '../../../infra/storage/blob-storage.js';
import { UploadReceiver } from './upload-receiver.js';
import { UploadReservationEntity } from './upload-reservation.entity.js';

/** An upload that has not reserved anything for this long is dead (its process crashed or it hung). */
export const STALE_UPLOAD_MS = 60 * 60 * 1000;

/**
 * Gives back what crashed uploads held: reservations not touched for an hour (a live upload
 * touches its row every few MiB), and temporary blobs older than that with no reservation.
 * Runs at start and every 10 minutes in the server (not in the CLI).
 */
@Injectable()
export class UploadSweeper {
  private readonly logger = new Logger('UploadSweeper');

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
    private readonly receiver: UploadReceiver,
    private readonly clock: Clock,
  ) {}

  @Timeout(1_000)
  @Interval(10 * 60 * 1000)
  async sweepInBackground(): Promise<void> {
    await this.sweep().catch((error: unknown) => this.logger.error({ err: error }, 'Upload sweep failed'));
  }

  async sweep(staleMs = STALE_UPLOAD_MS): Promise<{ reservations: number; blobs: number }> {
    const cutoff = new Date(this.clock.now().getTime() - staleMs);
    const stale = await this.transactions.run((tx) => tx.getRepository(UploadReservationEntity).findBy({ updatedAt: LessThan(cutoff) }));
    for (const reservation of stale) await this.receiver.release(reservation.id, reservation.tempKey);
    let blobs = 0;
    const live = new Set(
      (await this.transactions.run((tx) => tx.getRepository(UploadReservationEntity).find({ select: { tempKey: true } }))).map((r) => r.tempKey),
    );
    for await (const blob of this.storage.list('tmp/')) {
      if (blob.lastModified < cutoff && !live.has(blob.key)) {
        await this.storage.delete(blob.key);
        blobs++;
      }
    }
    if (stale.length > 0 || blobs > 0) this.logger.warn({ reservations: stale.length, blobs }, 'Released abandoned uploads');
    return { reservations: stale.length, blobs };
  }
}
