import { Command, CommandHandler, EventBus, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { findFolderToFill } from '../../folders/folder-tree-lock.js';
import { isRecoverable, stillRecoverableSql } from '../../trash/trash-window.js';
import { RestoredFileResponse } from '../dto/file-removal.responses.js';
import { FileStoredEvent } from '../events/file-stored.event.js';
import { FileEntity } from '../file.entity.js';
import { nameKeyOf } from '../file-naming.js';
import { freeFileName, retryOnNameCollision } from '../name-collisions.js';

export class RestoreFileCommand extends Command<RestoredFileResponse> {
  constructor(
    readonly actor: Actor,
    readonly fileId: string,
  ) {
    super();
  }
}

/**
 * Brings a trashed file back while its recovery window is open: into its folder when that folder
 * is still active, else the root; a name taken meanwhile gets a numbered suffix. The update is
 * conditional on the file still being trashed and unexpired, so it cannot race the purge. Share
 * links stay invalidated. After the commit, FileStoredEvent lets background media work that waited
 * while the file was in the trash (its thumbnail) go ahead.
 */
@CommandHandler(RestoreFileCommand)
export class RestoreFileHandler implements ICommandHandler<RestoreFileCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly events: EventBus,
  ) {}

  async execute({ actor, fileId }: RestoreFileCommand): Promise<RestoredFileResponse> {
    const { restored, file } = await retryOnNameCollision(() =>
      this.transactions.run(async (tx) => {
        const now = this.clock.now();
        const files = tx.getRepository(FileEntity);
        const file = await files.findOneBy({ id: fileId, accountId: actor.accountId, state: 'trashed' });
        if (!file || !isRecoverable(file, now)) throw new NotFound('file in trash', fileId);
        const folder = file.folderId
          ? await findFolderToFill(tx, actor.accountId, file.folderId)
          : null;
        const folderId = folder ? folder.id : null;
        const name = await freeFileName(tx, actor.accountId, folderId ?? '', file.name);
        const result = await tx
          .createQueryBuilder()
          .update(FileEntity)
          .set({ state: 'active', name, nameKey: nameKeyOf(name), folderId, folderKey: folderId ?? '', deletedAt: null, deletedBy: null, recoverableUntil: null })
          .where(`id = :id AND state = 'trashed' AND ${stillRecoverableSql('recoverable_until', ':now')}`, { id: file.id, now: now.toISOString() })
          .execute();
        if (!result.affected) throw new NotFound('file in trash', fileId);
        Object.assign(file, { name, folderId });
        return { restored: RestoredFileResponse.from(file, now), file };
      }),
    );
    this.events.publish(new FileStoredEvent(file.id, file.accountId, file.blobKey));
    return restored;
  }
}
