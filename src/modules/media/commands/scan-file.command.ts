import { InjectQueue } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { Queue } from 'bullmq';
import { Clock } from '../../../common/clock.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { BlobStorage } from '../../../infra/storage/blob-storage.js';
import { FileEntity } from '../../files/file.entity.js';
import { FileMediaEntity } from '../file-media.entity.js';
import { mediaJobId, mediaJobOptions, thumbnailKind, type MediaJobData } from '../media-jobs.js';
import { ScanCutShortError, VirusScanner, type ScanVerdict } from '../scanning/virus-scanner.js';

export type ScanOutcome =
  | { outcome: 'recorded'; scanStatus: 'clean' | 'infected' | 'skipped'; threat?: string; note?: string }
  | { outcome: 'discarded'; reason: string };

/**
 * Scans one stored version of a file and records the verdict, unless the file has meanwhile been
 * deleted or overwritten (a verdict on other bytes means nothing). Infected files are quarantined by
 * their scan_status: the files module hides them from listings and refuses their download.
 * Trashed files are scanned too: they can be restored.
 * An image, video or PDF gets its thumbnail job only from here, once its verdict is recorded: untrusted bytes are
 * not decoded before they are judged, and an infected file's thumbnail job refuses it without decoding.
 */
export class ScanFileCommand extends Command<ScanOutcome> {
  constructor(
    readonly job: MediaJobData,
    /** Attempts of this job that failed before this one (BullMQ's attemptsMade). */
    readonly failedAttempts = 0,
  ) {
    super();
  }
}

@CommandHandler(ScanFileCommand)
export class ScanFileHandler implements ICommandHandler<ScanFileCommand> {
  private readonly logger = new Logger('Media');

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
    private readonly scanner: VirusScanner,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    @InjectQueue(QUEUES.thumbnails) private readonly thumbnails: Queue<MediaJobData>,
  ) {}

  async execute({ job, failedAttempts }: ScanFileCommand): Promise<ScanOutcome> {
    const { fileId, blobKey } = job;
    const file = await this.transactions.dataSource.getRepository(FileEntity).findOne({ select: { id: true, blobKey: true, size: true, mimeType: true }, where: { id: fileId } });
    if (!file) return { outcome: 'discarded', reason: 'the file was deleted' };
    if (file.blobKey !== blobKey) return { outcome: 'discarded', reason: 'the file was overwritten with newer content' };

    const verdict = this.scanner.verdictWithoutBytes(file.size) ?? (await this.scanBytes(fileId, blobKey, file.size, failedAttempts));
    if (!verdict) return { outcome: 'discarded', reason: 'the file was deleted or overwritten during the scan' };
    const now = this.clock.now();
    const threat = verdict.result === 'infected' ? verdict.threat : null;
    const note = verdict.result === 'skipped' ? verdict.reason : null;

    const recorded = await this.transactions.run(async (tx) => {
      // Conditional on the version, so a verdict cannot land on bytes stored after the scan began.
      const update = await tx.getRepository(FileEntity).update({ id: fileId, blobKey }, { scanStatus: verdict.result });
      if (!update.affected) return false;
      await tx.getRepository(FileMediaEntity).update({ fileId, blobKey }, { scanThreat: threat, scanNote: note, scannedAt: now, updatedAt: now });
      return true;
    });
    if (!recorded) return { outcome: 'discarded', reason: 'the file was deleted or overwritten during the scan' };
    // A failed enqueue fails the job, whose retry records the same verdict and enqueues again (same job id: once).
    if (thumbnailKind(file.mimeType)) {
      await this.thumbnails.add('thumbnail', job, mediaJobOptions('thumbnail', mediaJobId('thumbnail', fileId, blobKey), this.config.media.retryDelayMs));
    }

    if (threat) this.logger.warn({ fileId, accountId: job.accountId, threat }, 'Infected file quarantined');
    return { outcome: 'recorded', scanStatus: verdict.result, ...(threat ? { threat } : {}), ...(note ? { note } : {}) };
  }

  /** The scanner's verdict on the stored bytes; null when the file went away meanwhile. */
  private async scanBytes(fileId: string, blobKey: string, size: number, failedAttempts: number): Promise<ScanVerdict | null> {
    try {
      // Read up to the known size: buffers sized to the file, no extra read for the end.
      const content = await this.storage.read(blobKey, size > 0 ? { start: 0, end: size - 1 } : undefined);
      try {
        return await this.scanner.scan(content, size);
      } catch (error) {
        // A first cut may be a scanner restarting: retried, so a file is never left unscanned for it.
        if (error instanceof ScanCutShortError && failedAttempts > 0) return error.verdictIfRepeated;
        throw error;
      } finally {
        // A scanner that skips a file never reads it: close what was opened either way.
        content.destroy();
      }
    } catch (error) {
      // Bytes deleted under us mean the file went away; other storage and scanner errors are worth a retry.
      const current = await this.transactions.dataSource.getRepository(FileEntity).findOneBy({ id: fileId });
      if (!current || current.blobKey !== blobKey) return null;
      throw error;
    }
  }
}
