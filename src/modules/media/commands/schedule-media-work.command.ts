import { InjectQueue } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { Queue } from 'bullmq';
import { Clock } from '../../../common/clock.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { BlobStorage, blobKeys } from '../../../infra/storage/blob-storage.js';
import { FileEntity } from '../../files/file.entity.js';
import { FileMediaEntity } from '../file-media.entity.js';
import { lockFile } from '../file-lock.js';
import { mediaJobId, mediaJobOptions, thumbnailKind, type MediaJobData } from '../media-jobs.js';

export interface ScheduledMediaWork {
  /** False when the file is gone or already holds other bytes: a later event covers the newer version. */
  scheduled: boolean;
  thumbnail: boolean;
}

/**
 * New bytes were stored for a file: reset its media state for this version and queue a scan; images, videos and
 * PDFs get their thumbnail job from the scan, once judged. Repeating it for the same version changes nothing,
 * except that a thumbnail deferred because the file was in the trash, or lost, is queued now if the file is
 * judged and active again.
 */
export class ScheduleMediaWorkCommand extends Command<ScheduledMediaWork> {
  constructor(
    readonly fileId: string,
    readonly accountId: string,
    readonly blobKey: string,
  ) {
    super();
  }
}

@CommandHandler(ScheduleMediaWorkCommand)
export class ScheduleMediaWorkHandler implements ICommandHandler<ScheduleMediaWorkCommand> {
  private readonly logger = new Logger('Media');

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    @InjectQueue(QUEUES.thumbnails) private readonly thumbnails: Queue<MediaJobData>,
    @InjectQueue(QUEUES.scans) private readonly scans: Queue<MediaJobData>,
  ) {}

  async execute({ fileId, accountId, blobKey }: ScheduleMediaWorkCommand): Promise<ScheduledMediaWork> {
    const outcome = await this.transactions.run(async (tx) => {
      const file = await lockFile(tx, fileId);
      if (!file || file.accountId !== accountId || file.blobKey !== blobKey) return null;
      const kind = thumbnailKind(file.mimeType);
      const media = await tx.getRepository(FileMediaEntity).findOneBy({ fileId });
      if (media?.blobKey === blobKey) {
        // A thumbnail skipped while the file was in the trash is made once the file is active again (restored).
        const rerunThumbnail = kind !== null && media.thumbnailStatus === 'deferred' && file.state === 'active';
        if (rerunThumbnail) await tx.getRepository(FileMediaEntity).update({ fileId, blobKey }, { thumbnailStatus: 'pending', updatedAt: this.clock.now() });
        return { kind, staleThumbnail: null, rerunThumbnail, judged: file.scanStatus !== 'pending' };
      }

      // A new version: the old thumbnail shows other bytes and the old scan verdict judged other bytes.
      const ownThumbnail = blobKeys.thumbnail(accountId, fileId, blobKeys.versionOf(blobKey));
      const staleThumbnail = file.thumbnailKey && file.thumbnailKey !== ownThumbnail ? file.thumbnailKey : null;
      await tx.getRepository(FileEntity).update(
        { id: fileId, blobKey },
        { scanStatus: 'pending', ...(staleThumbnail ? { thumbnailKey: null } : {}) },
      );
      await tx.getRepository(FileMediaEntity).save({
        fileId,
        blobKey,
        thumbnailStatus: kind ? (file.thumbnailKey === ownThumbnail ? 'ready' : 'pending') : 'none',
        thumbnailError: null,
        scanThreat: null,
        scanNote: null,
        scannedAt: null,
        updatedAt: this.clock.now(),
      });
      return { kind, staleThumbnail, rerunThumbnail: false, judged: false };
    });
    if (!outcome) return { scheduled: false, thumbnail: false };

    if (outcome.staleThumbnail) await this.deleteQuietly(outcome.staleThumbnail);
    // Enqueued after the commit, also on a repeat: the deterministic job ids make a second add a no-op,
    // and a repeat heals a first attempt whose enqueue failed.
    const data: MediaJobData = { fileId, accountId, blobKey };
    const retryDelay = this.config.media.retryDelayMs;
    // Bytes not judged yet get their thumbnail job from their scan, once judged (ScanFileCommand).
    if (outcome.kind && outcome.judged) {
      const jobId = mediaJobId('thumbnail', fileId, blobKey);
      // The finished job still holds its id; only removing it lets the same id run again. If that job is still
      // running, it has already deferred (that is why this runs) and is only finishing: the thumbnail goes under an id of
      // its own. (rerunThumbnail is true for one scheduling per restore: it turned 'deferred' into 'pending' under the lock.)
      const removed = outcome.rerunThumbnail ? await this.thumbnails.remove(jobId).then((count) => count > 0, () => false) : true;
      const id = removed || !(await this.thumbnails.getJob(jobId)) ? jobId : `${jobId}-restored-${Date.now()}`;
      await this.thumbnails.add('thumbnail', data, mediaJobOptions('thumbnail', id, retryDelay));
    }
    const scanJobId = mediaJobId('scan', fileId, blobKey);
    await this.scans.add('scan', data, mediaJobOptions('scan', scanJobId, retryDelay));
    return { scheduled: true, thumbnail: outcome.kind !== null };
  }

  private async deleteQuietly(key: string): Promise<void> {
    try {
      await this.storage.delete(key);
    } catch (error) {
      // An orphaned thumbnail costs a few KB and is not served (no row points at it); do not fail the upload's follow-up for it.
      this.logger.warn({ key, err: error }, 'Could not delete a stale thumbnail');
    }
  }
}
