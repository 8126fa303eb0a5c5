import { Logger } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { Clock } from '../../../common/clock.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { BlobStorage } from '../../../infra/storage/blob-storage.js';
import { FileEntity } from '../../files/file.entity.js';
import { deleteBlobs, deleteFilesPermanently } from '../../files/file-removal.js';

/** Files removed per transaction, by the purge and by emptying the trash. Defined here, not beside the trash's response DTOs, so `trash purge` on the command line never loads their OpenAPI decorators. */
export const PURGE_BATCH = 200;

export interface PurgeResult {
  purged: number;
  freed_bytes: number;
}

export class PurgeTrashCommand extends Command<PurgeResult> {
  /** `now` defaults to the clock; tests pass a later time to expire files without waiting. */
  constructor(readonly now?: Date) {
    super();
  }
}

/**
 * Deletes, for good, every trashed file whose recovery window has passed (all accounts), in
 * batches of small transactions with a pause between them so requests keep flowing. Each delete
 * is conditional (still trashed, still expired): a file restored meanwhile is never touched, and
 * when two processes purge at once, each file is deleted (and counted, and announced) by one only.
 */
@CommandHandler(PurgeTrashCommand)
export class PurgeTrashHandler implements ICommandHandler<PurgeTrashCommand> {
  private readonly logger = new Logger('TrashPurge');

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
    private readonly clock: Clock,
  ) {}

  async execute(command: PurgeTrashCommand): Promise<PurgeResult> {
    const now = command.now ?? this.clock.now();
    let purged = 0;
    let freed = 0;
    // A committed batch's blobs are unlinked while the next batch's transaction runs; never before the commit.
    let unlinking: Promise<void> = Promise.resolve();
    try {
      for (;;) {
        const result = await this.transactions.run(async (tx) => {
          const batch = await tx
            .getRepository(FileEntity)
            .createQueryBuilder('f')
            .select(['f.id', 'f.accountId', 'f.name', 'f.size', 'f.blobKey', 'f.thumbnailKey'])
            .where("f.state = 'trashed' AND f.recoverable_until <= :now", { now: now.toISOString() })
            // In the order of idx_files_purge, so each batch is a short index range, whatever the backlog.
            .orderBy('f.recoverable_until', 'ASC')
            .limit(PURGE_BATCH)
            .getMany();
          if (batch.length === 0) return null;
          return deleteFilesPermanently(tx, batch, 'system', now, { state: 'trashed', expiredBy: now });
        });
        await unlinking;
        // Deleted rows leave the range; rows a restore took away no longer match. A batch that deleted
        // nothing therefore means nothing deletable is left (and guards against looping forever).
        if (result === null || result.length === 0) break;
        purged += result.length;
        freed += result.reduce((sum, f) => sum + f.size, 0);
        unlinking = deleteBlobs(this.storage, result, this.logger);
        await yieldToEventLoop();
      }
    } finally {
      await unlinking;
    }
    if (purged > 0) this.logger.log({ purged, freed_bytes: freed }, 'Purged expired trash');
    return { purged, freed_bytes: freed };
  }
}
