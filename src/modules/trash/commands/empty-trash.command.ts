import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { BlobDeletions } from '../../../infra/storage/blob-deletions.js';
import { FileEntity } from '../../files/file.entity.js';
import { blobsOf, deleteFilesPermanently } from '../../files/file-removal.js';
import { EmptiedTrashResponse } from '../dto/trash.dto.js';
import { PURGE_BATCH } from './purge-trash.command.js';

export class EmptyTrashCommand extends Command<EmptiedTrashResponse> {
  constructor(readonly actor: Actor) {
    super();
  }
}

/**
 * Permanently deletes every trashed file of the account, in batches (one transaction each, so the
 * API stays responsive), freeing storage and recording file.deleted (permanent) per file.
 */
@CommandHandler(EmptyTrashCommand)
export class EmptyTrashHandler implements ICommandHandler<EmptyTrashCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly blobDeletions: BlobDeletions,
    private readonly clock: Clock,
  ) {}

  async execute({ actor }: EmptyTrashCommand): Promise<EmptiedTrashResponse> {
    let deletedCount = 0;
    let freedBytes = 0;
    let after = '';
    for (;;) {
      const result = await this.transactions.run(async (tx) => {
        const batch = await tx
          .getRepository(FileEntity)
          .createQueryBuilder('f')
          .where("f.account_id = :accountId AND f.state = 'trashed' AND f.id > :after", { accountId: actor.accountId, after })
          .orderBy('f.id', 'ASC')
          .limit(PURGE_BATCH)
          .getMany();
        if (batch.length === 0) return null;
        return { last: batch[batch.length - 1].id, deleted: await deleteFilesPermanently(tx, batch, actor.userId, this.clock.now(), { state: 'trashed' }) };
      });
      if (result === null) break;
      // Only once committed: a transaction retried (a deadlock, a busy database) starts again from the same place.
      after = result.last;
      const { deleted } = result;
      deletedCount += deleted.length;
      freedBytes += deleted.reduce((sum, f) => sum + f.size, 0);
      await this.blobDeletions.deleteNow(deleted.flatMap(blobsOf));
    }
    return Object.assign(new EmptiedTrashResponse(), { deleted_count: deletedCount, freed_bytes: freedBytes });
  }
}
