import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { BulkDeleteResponse } from '../dto/file-removal.responses.js';
import { FileEntity } from '../file.entity.js';
import { moveFilesToTrash } from '../file-removal.js';

export class BulkDeleteFilesCommand extends Command<BulkDeleteResponse> {
  constructor(
    readonly actor: Actor,
    readonly fileIds: string[],
  ) {
    super();
  }
}

/**
 * Moves many files to the trash, in the order given. Each id is its own small transaction, so one
 * failure fails only that id, and a repeated id finds its file already trashed (not_found).
 */
@CommandHandler(BulkDeleteFilesCommand)
export class BulkDeleteFilesHandler implements ICommandHandler<BulkDeleteFilesCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, fileIds }: BulkDeleteFilesCommand): Promise<BulkDeleteResponse> {
    const result: BulkDeleteResponse = Object.assign(new BulkDeleteResponse(), { deleted: [], failed: [], total: fileIds.length, deleted_count: 0, failed_count: 0 });
    for (const id of fileIds) {
      const moved = await this.transactions.run(async (tx) => {
        const file = await tx.getRepository(FileEntity).findOneBy({ id, accountId: actor.accountId, state: 'active' });
        return file ? moveFilesToTrash(tx, [file], actor.userId, this.clock.now(), this.config.trashRetentionDays) : [];
      });
      if (moved.length > 0) result.deleted.push(id);
      else result.failed.push({ id, error: { code: 'not_found', message: `File ${id} not found.` } });
    }
    result.deleted_count = result.deleted.length;
    result.failed_count = result.failed.length;
    return result;
  }
}
