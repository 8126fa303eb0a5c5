import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Logger } from '@nestjs/common';
import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Clock } from '../../../common/clock.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { BlobStorage, blobKeys } from '../../../infra/storage/blob-storage.js';
import { FileEntity } from '../../files/file.entity.js';
import { FileMediaEntity } from '../file-media.entity.js';
import { lockFile } from '../file-lock.js';
import { thumbnailKind, type MediaJobData } from '../media-jobs.js';
import { ThumbnailRenderer, ToolMissingError, UnusableMediaError } from '../thumbnails/thumbnail-renderer.js';
import { makeThumbnailWorkdir } from '../thumbnails/thumbnail-workdirs.js';

export type ThumbnailOutcome =
  | { outcome: 'created'; thumbnailKey: string }
  /** Nothing to do (any more): the file is gone, trashed, holds other bytes, or is no image, video or PDF. */
  | { outcome: 'discarded'; reason: string }
  /** This machine lacks the tool (ffmpeg, pdftoppm): no thumbnail, and no failed job either. */
  | { outcome: 'skipped'; reason: string };

/**
 * Makes the thumbnail of one stored version and points the file at it, only if the file is still
 * active and still holds that version. Throws UnusableMediaError (after recording it) when the media
 * cannot be rendered; any other error is transient and worth a retry.
 */
export class GenerateThumbnailCommand extends Command<ThumbnailOutcome> {
  constructor(readonly job: MediaJobData) {
    super();
  }
}

@CommandHandler(GenerateThumbnailCommand)
export class GenerateThumbnailHandler implements ICommandHandler<GenerateThumbnailCommand> {
  private readonly logger = new Logger('Media');

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
    private readonly renderer: ThumbnailRenderer,
    private readonly clock: Clock,
  ) {}

  async execute({ job }: GenerateThumbnailCommand): Promise<ThumbnailOutcome> {
    const { fileId, accountId, blobKey } = job;
    const file = await this.transactions.dataSource.getRepository(FileEntity).findOneBy({ id: fileId });
    const stale = whyStale(file, blobKey);
    if (stale) {
      // Restored since it was read: go on as for an active file (a restore that saw no deferral queued nothing).
      if (file?.state === 'trashed' && file.blobKey === blobKey && !(await this.defer(job))) return this.execute({ job } as GenerateThumbnailCommand);
      return { outcome: 'discarded', reason: stale };
    }
    // Found infected already: its bytes are not decoded in this process (image exploits are what signatures catch),
    // and no thumbnail of it could be served anyway.
    if (file!.scanStatus === 'infected') return this.refuseQuarantined(job);
    const kind = thumbnailKind(file!.mimeType);
    if (!kind) return { outcome: 'discarded', reason: `no thumbnails for ${file!.mimeType}` };
    const thumbnailKey = blobKeys.thumbnail(accountId, fileId, blobKeys.versionOf(blobKey));
    // Made already (this version scheduled again once its finished job left Redis): storage refuses to write over
    // it, and the refusal would take the served thumbnail away until a retry rendered the same picture again.
    if (file!.thumbnailKey === thumbnailKey && (await this.storage.exists(thumbnailKey))) return { outcome: 'created', thumbnailKey };

    let thumbnail: Buffer | string;
    try {
      thumbnail = await this.render(job, kind);
    } catch (error) {
      if (error instanceof ToolMissingError) return this.skip(job, error.message);
      throw error;
    }
    if (typeof thumbnail === 'string') return { outcome: 'discarded', reason: thumbnail };
    await this.storage.write(thumbnailKey, Readable.from([thumbnail]));

    const result = await this.transactions.run(async (tx) => {
      const current = await lockFile(tx, fileId);
      const reason = whyStale(current, blobKey);
      if (reason) {
        if (current?.state === 'trashed' && current.blobKey === blobKey) {
          await tx.getRepository(FileMediaEntity).update({ fileId, blobKey }, { thumbnailStatus: 'deferred', updatedAt: this.clock.now() });
        }
        return { reason, keep: current?.thumbnailKey === thumbnailKey, previous: null };
      }
      await tx.getRepository(FileEntity).update({ id: fileId, blobKey }, { thumbnailKey });
      await tx.getRepository(FileMediaEntity).update({ fileId, blobKey }, { thumbnailStatus: 'ready', thumbnailError: null, updatedAt: this.clock.now() });
      return { reason: null, keep: true, previous: current!.thumbnailKey };
    });

    // Only after the commit: the old thumbnail may be served until the row stops pointing at it.
    if (result.previous && result.previous !== thumbnailKey) await this.deleteQuietly(result.previous);
    if (result.reason) {
      // Deleted or overwritten while we rendered: the thumbnail we wrote belongs to nobody.
      if (!result.keep) await this.deleteQuietly(thumbnailKey);
      return { outcome: 'discarded', reason: result.reason };
    }
    return { outcome: 'created', thumbnailKey };
  }

  /** The rendered WebP, or why there is nothing to render any more. */
  private async render(job: MediaJobData, kind: 'image' | 'video' | 'pdf'): Promise<Buffer | string> {
    // The tools need a seekable local file; the copy streams, so the file is never held in memory.
    const dir = await makeThumbnailWorkdir();
    try {
      const source = join(dir, 'source');
      try {
        await pipeline(await this.storage.read(job.blobKey), createWriteStream(source));
      } catch (error) {
        // Bytes deleted under us mean the file went away; otherwise storage is having trouble: retry.
        const reason = whyStale(await this.transactions.dataSource.getRepository(FileEntity).findOneBy({ id: job.fileId }), job.blobKey);
        if (reason) return reason;
        throw error;
      }
      try {
        return await this.renderer.render(kind, source);
      } catch (error) {
        if (error instanceof UnusableMediaError) await this.recordFailure(job, error.message);
        throw error;
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * The file is in the trash: no thumbnail now, but one is made if it is restored (see ScheduleMediaWorkCommand).
   * Decided under the file's lock, as a restore's scheduling is: false when the file is no longer trashed with
   * these bytes, since a restore that came first found nothing deferred and so queued nothing.
   */
  private async defer(job: MediaJobData): Promise<boolean> {
    return this.transactions.run(async (tx) => {
      const current = await lockFile(tx, job.fileId);
      if (current?.state !== 'trashed' || current.blobKey !== job.blobKey) return false;
      await tx.getRepository(FileMediaEntity).update({ fileId: job.fileId, blobKey: job.blobKey }, { thumbnailStatus: 'deferred', updatedAt: this.clock.now() });
      return true;
    });
  }

  private async skip(job: MediaJobData, reason: string): Promise<ThumbnailOutcome> {
    this.logger.debug({ fileId: job.fileId, reason }, 'Thumbnail skipped');
    await this.transactions.run((tx) =>
      tx.getRepository(FileMediaEntity).update({ fileId: job.fileId, blobKey: job.blobKey }, { thumbnailStatus: 'skipped', thumbnailError: reason.slice(0, 500), updatedAt: this.clock.now() }),
    );
    return { outcome: 'skipped', reason };
  }

  private async refuseQuarantined(job: MediaJobData): Promise<ThumbnailOutcome> {
    const reason = 'the file is quarantined (infected): it is not rendered';
    await this.transactions.run((tx) =>
      tx.getRepository(FileMediaEntity).update({ fileId: job.fileId, blobKey: job.blobKey }, { thumbnailStatus: 'none', thumbnailError: reason, updatedAt: this.clock.now() }),
    );
    return { outcome: 'discarded', reason };
  }

  private async recordFailure(job: MediaJobData, message: string): Promise<void> {
    await this.transactions.run((tx) =>
      tx.getRepository(FileMediaEntity).update({ fileId: job.fileId, blobKey: job.blobKey }, { thumbnailStatus: 'failed', thumbnailError: message.slice(0, 500), updatedAt: this.clock.now() }),
    );
  }

  private async deleteQuietly(key: string): Promise<void> {
    try {
      await this.storage.delete(key);
    } catch (error) {
      this.logger.warn({ key, err: error }, 'Could not delete an unused thumbnail');
    }
  }
}

function whyStale(file: FileEntity | null, blobKey: string): string | null {
  if (!file) return 'the file was deleted';
  if (file.state !== 'active') return 'the file is in the trash';
  if (file.blobKey !== blobKey) return 'the file was overwritten with newer content';
  return null;
}
