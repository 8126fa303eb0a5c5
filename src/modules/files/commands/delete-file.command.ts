import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound, PermissionDenied } from '../../../common/errors/api-error.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { BlobDeletions } from '../../../infra/storage/blob-deletions.js';
import { DeletedFileResponse } from '../dto/file-removal.responses.js';
import { FileEntity } from '../file.entity.js';
import { blobsOf, deleteFilesPermanently, moveFilesToTrash } from '../file-removal.js';

export class DeleteFileCommand extends Command<DeletedFileResponse> {
  constructor(
    readonly actor: Actor,
    readonly fileId: string,
    readonly permanent: boolean,
  ) {
    super();
  }
}

/**
 * DELETE /files/{id}: to the trash, or with `permanent` (elevated key) gone for good, which frees
 * its storage. A permanent delete also takes a file that is already in the trash, so one trashed
 * file can be removed without emptying the whole trash.
 */
@CommandHandler(DeleteFileCommand)
export class DeleteFileHandler implements ICommandHandler<DeleteFileCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly blobDeletions: BlobDeletions,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, fileId, permanent }: DeleteFileCommand): Promise<DeletedFileResponse> {
    if (permanent && !actor.elevated) throw new PermissionDenied('Permanent deletion needs an elevated API key.');
    const now = this.clock.now();
    if (!permanent) {
      return this.transactions.run(async (tx) => {
        const file = await tx.getRepository(FileEntity).findOneBy({ id: fileId, accountId: actor.accountId, state: 'active' });
        const [moved] = file ? await moveFilesToTrash(tx, [file], actor.userId, now, this.config.trashRetentionDays) : [];
        if (!moved) throw new NotFound('file', fileId);
        return DeletedFileResponse.from(moved, now, moved.recoverableUntil);
      });
    }
    const deleted = await this.transactions.run(async (tx) => {
      const file = await tx.getRepository(FileEntity).findOneBy({ id: fileId, accountId: actor.accountId });
      const [gone] = file ? await deleteFilesPermanently(tx, [file], actor.userId, now, { state: file.state }) : [];
      if (!gone) throw new NotFound('file', fileId);
      return gone;
    });
    await this.blobDeletions.deleteNow(blobsOf(deleted));
    return DeletedFileResponse.from(deleted, now, null);
  }
}
