import { InjectQueue } from '@nestjs/bullmq';
import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { Queue } from 'bullmq';
import { In } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { AppConfig } from '../../../config/app-config.js';
import { entityJsonColumns } from '../../../infra/database/sql-dialect.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { BlobPlacements } from '../../../infra/storage/blob-placements.js';
import { blobKeys } from '../../../infra/storage/blob-storage.js';
import { FileEntity } from '../../files/file.entity.js';
import { FileMediaEntity } from '../file-media.entity.js';
import { VirusScanner } from '../scanning/virus-scanner.js';
import { mediaJobId, mediaJobOptions, thumbnailKind, type MediaJobData } from '../media-jobs.js';

/**
 * Media work for a batch of uploads (the file.uploaded events of one outbox relay pass): the media rows of
 * the files' current versions start over in one statement (with the scan verdicts that need no bytes), then
 * every other scan and every thumbnail job goes to Redis in one addBulk per queue, once the files' blobs are in
 * place. A file gone or already scheduled for its current version is left as it is (its job ids are
 * deterministic, so adding them again is a no-op).
 */
export class ScheduleUploadedMediaCommand extends Command<{ scans: number; thumbnails: number }> {
  constructor(readonly files: Array<{ fileId: string; accountId: string }>) {
    super();
  }
}

@CommandHandler(ScheduleUploadedMediaCommand)
export class ScheduleUploadedMediaHandler implements ICommandHandler<ScheduleUploadedMediaCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly placements: BlobPlacements,
    private readonly scanner: VirusScanner,
    @InjectQueue(QUEUES.thumbnails) private readonly thumbnails: Queue<MediaJobData>,
    @InjectQueue(QUEUES.scans) private readonly scans: Queue<MediaJobData>,
  ) {}

  async execute({ files: uploaded }: ScheduleUploadedMediaCommand): Promise<{ scans: number; thumbnails: number }> {
    if (uploaded.length === 0) return { scans: 0, thumbnails: 0 };
    const accountOf = new Map(uploaded.map((f) => [f.fileId, f.accountId]));
    const found = await this.transactions.dataSource.getRepository(FileEntity).find({
      select: { id: true, accountId: true, blobKey: true, mimeType: true, thumbnailKey: true, size: true },
      where: { id: In([...accountOf.keys()]) },
    });
    const files = found.filter((file) => accountOf.get(file.id) === file.accountId);
    if (files.length === 0) return { scans: 0, thumbnails: 0 };

    const now = this.clock.now();
    // A verdict that needs no bytes (no scanner configured, a file larger than clamd takes) is recorded here, with the
    // media row, instead of by a scan job that would open nothing: a whole job's Redis and database round trips saved.
    const verdicts = new Map(files.map((file) => [file.id, this.scanner.verdictWithoutBytes(file.size)]));
    await this.transactions.run(async (tx) => {
      const dialect = this.transactions.dialect;
      const columns = entityJsonColumns(tx, FileMediaEntity, ['fileId', 'blobKey', 'thumbnailStatus', 'scanThreat', 'scanNote', 'scannedAt', 'updatedAt']);
      const params = dialect.parameters();
      const rows = params.add(
        JSON.stringify(
          files.map((file) => {
            const own = blobKeys.thumbnail(file.accountId, file.id, blobKeys.versionOf(file.blobKey));
            const thumbnailStatus = thumbnailKind(file.mimeType) ? (file.thumbnailKey === own ? 'ready' : 'pending') : 'none';
            const verdict = verdicts.get(file.id);
            return columns.row({
              fileId: file.id,
              blobKey: file.blobKey,
              thumbnailStatus,
              scanThreat: verdict?.result === 'infected' ? verdict.threat : null,
              scanNote: verdict?.result === 'skipped' ? verdict.reason : null,
              scannedAt: verdict ? now : null,
              updatedAt: now,
            });
          }),
        ),
      );
      // Only for the version the file still holds; a row already describing that version keeps its results.
      await tx.query(
        `INSERT INTO file_media (file_id, blob_key, thumbnail_status, thumbnail_error, scan_threat, scan_note, scanned_at, updated_at)
         SELECT v.file_id, v.blob_key, v.thumbnail_status, NULL, v.scan_threat, v.scan_note, v.scanned_at, v.updated_at
         FROM ${dialect.jsonRows(rows, columns.types)} JOIN files ON files.id = v.file_id AND files.blob_key = v.blob_key WHERE true
         ON CONFLICT (file_id) DO UPDATE SET blob_key = excluded.blob_key, thumbnail_status = excluded.thumbnail_status, thumbnail_error = NULL,
           scan_threat = excluded.scan_threat, scan_note = excluded.scan_note, scanned_at = excluded.scanned_at, updated_at = excluded.updated_at
         WHERE file_media.blob_key <> excluded.blob_key`,
        params.values,
      );
      const judged = files.flatMap((file) => {
        const verdict = verdicts.get(file.id);
        return verdict ? [{ file_id: file.id, blob_key: file.blobKey, scan_status: verdict.result }] : [];
      });
      if (judged.length === 0) return;
      const verdictParams = dialect.parameters();
      const verdictRows = verdictParams.add(JSON.stringify(judged));
      // As the scan job records it: on the version judged, and only over a verdict still pending.
      await tx.query(
        `UPDATE files SET scan_status = v.scan_status FROM ${dialect.jsonRows(verdictRows, { file_id: 'varchar', blob_key: 'varchar', scan_status: 'varchar' })}
         WHERE files.id = v.file_id AND files.blob_key = v.blob_key AND files.scan_status = 'pending'`,
        verdictParams.values,
      );
    });

    const retryDelay = this.config.media.retryDelayMs;
    const job = (file: FileEntity): MediaJobData => ({ fileId: file.id, accountId: file.accountId, blobKey: file.blobKey });
    const toScan = files.filter((file) => !verdicts.get(file.id));
    // A file that is scanned gets its thumbnail job from its scan, once judged (ScanFileCommand).
    const withThumbnails = files.filter((file) => thumbnailKind(file.mimeType) !== null && verdicts.get(file.id));
    // A job starts only once its bytes are at the final key: the relay can pass on file.uploaded before the upload moved them.
    await this.placements.settled(files.map((file) => file.blobKey));
    // Enqueued after the commit; each is a no-op for a version whose job exists already.
    await Promise.all([
      withThumbnails.length > 0
        ? this.thumbnails.addBulk(
            withThumbnails.map((file) => ({ name: 'thumbnail', data: job(file), opts: mediaJobOptions('thumbnail', mediaJobId('thumbnail', file.id, file.blobKey), retryDelay) })),
          )
        : Promise.resolve([]),
      toScan.length > 0
        ? this.scans.addBulk(toScan.map((file) => ({ name: 'scan', data: job(file), opts: mediaJobOptions('scan', mediaJobId('scan', file.id, file.blobKey), retryDelay) })))
        : Promise.resolve([]),
    ]);
    return { scans: toScan.length, thumbnails: withThumbnails.length };
  }
}
