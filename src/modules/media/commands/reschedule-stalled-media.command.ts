import { Logger } from '@nestjs/common';
import { Command, CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { FileEntity } from '../../files/file.entity.js';
import { FileMediaEntity } from '../file-media.entity.js';
import { ScheduleMediaWorkCommand } from './schedule-media-work.command.js';

/** A file still pending this long after its bytes changed probably lost its event (a crash between commit and publish). */
export const STALLED_AFTER_MS = 10 * 60 * 1000;
const BATCH = 500;

/**
 * The safety net behind FileStoredEvent: files whose scan, or whose thumbnail, is still pending well after
 * their last change are scheduled again. A thumbnail is looked at on its own because a scan verdict that
 * needs no bytes is recorded before the thumbnail job is queued, so a lost thumbnail job leaves no pending scan.
 * Scheduling is idempotent (same job ids), so files whose jobs are merely queued or retrying are untouched;
 * only lost work is queued anew.
 */
export class RescheduleStalledMediaCommand extends Command<{ scheduled: number }> {}

@CommandHandler(RescheduleStalledMediaCommand)
export class RescheduleStalledMediaHandler implements ICommandHandler<RescheduleStalledMediaCommand> {
  private readonly logger = new Logger('Media');

  constructor(
    private readonly dataSource: DataSource,
    private readonly commands: CommandBus,
    private readonly clock: Clock,
  ) {}

  async execute(): Promise<{ scheduled: number }> {
    const cutoff = new Date(this.clock.now().getTime() - STALLED_AFTER_MS);
    // The pending states are literals, not parameters: that is what lets SQLite use the partial indexes of
    // migration 1764400000000 instead of reading every file.
    const stalledScans: Array<Pick<FileEntity, 'id' | 'accountId' | 'blobKey'>> = await this.dataSource
      .getRepository(FileEntity)
      .createQueryBuilder('f')
      .select(['f.id AS id', 'f.account_id AS "accountId"', 'f.blob_key AS "blobKey"'])
      .where("f.scan_status = 'pending' AND f.modified_at < :cutoff", { cutoff: cutoff.toISOString() })
      .orderBy('f.modified_at', 'ASC')
      .addOrderBy('f.id', 'ASC')
      .limit(BATCH)
      .getRawMany();
    const stalledThumbnails: Array<Pick<FileEntity, 'id' | 'accountId' | 'blobKey'>> = await this.dataSource
      .getRepository(FileEntity)
      .createQueryBuilder('f')
      .innerJoin(FileMediaEntity, 'm', 'm.file_id = f.id AND m.blob_key = f.blob_key')
      .select(['f.id AS id', 'f.account_id AS "accountId"', 'f.blob_key AS "blobKey"'])
      .where("m.thumbnail_status = 'pending' AND m.updated_at < :cutoff AND f.scan_status <> 'pending'", { cutoff: cutoff.toISOString() })
      .orderBy('m.updated_at', 'ASC')
      .addOrderBy('f.id', 'ASC')
      .limit(BATCH)
      .getRawMany();
    const stalled = [...stalledScans, ...stalledThumbnails];
    let scheduled = 0;
    for (const file of stalled) {
      const outcome = await this.commands.execute(new ScheduleMediaWorkCommand(file.id, file.accountId, file.blobKey));
      if (outcome.scheduled) scheduled++;
    }
    if (stalled.length > 0) this.logger.log({ checked: stalled.length, scheduled }, 'Scheduled media work again for files with a stalled scan or thumbnail (repeats of queued jobs are no-ops)');
    return { scheduled };
  }
}
