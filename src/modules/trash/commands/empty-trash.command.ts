import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { keysetAfter, keysetOrderByCondition, type KeysetOrder, type KeysetPosition } from '../../../infra/database/keyset.js';
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
    // In the order of idx_files_trash (account, state, deleted_at, id), so each batch is a short range of it: ordered by
    // id alone, every batch sorted the account's whole trash again, and a trash of 200,000 files took minutes.
    const order: KeysetOrder = { column: 'f.deleted_at', id: 'f.id', descending: false };
    let after: KeysetPosition | null = null;
    for (;;) {
      const result = await this.transactions.run(async (tx) => {
        const query = tx
          .getRepository(FileEntity)
          .createQueryBuilder('f')
          .where("f.account_id = :accountId AND f.state = 'trashed'", { accountId: actor.accountId })
          .orderBy(keysetOrderByCondition(order))
          .limit(PURGE_BATCH);
        if (after) query.andWhere(keysetAfter(order, [':afterDeletedAt', ':afterId']), { afterDeletedAt: after[0], afterId: after[1] });
        const batch = await query.getMany();
        if (batch.length === 0) return null;
        const last = batch[batch.length - 1];
        return { last: [last.deletedAt!.toISOString(), last.id] as const, deleted: await deleteFilesPermanently(tx, batch, actor.userId, this.clock.now(), { state: 'trashed' }) };
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
