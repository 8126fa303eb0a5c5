import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { In } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { FileEntity } from '../../files/file.entity.js';
import { moveFilesToTrash } from '../../files/file-removal.js';
import { DeletedFolderResponse } from '../dto/folder.dto.js';
import { FolderEntity } from '../folder.entity.js';
import { lockFolderTree } from '../folder-tree-lock.js';

export class DeleteFolderCommand extends Command<DeletedFolderResponse> {
  constructor(
    readonly actor: Actor,
    readonly folderId: string,
  ) {
    super();
  }
}

/**
 * Moves a folder and everything in it, at any depth, to the trash in one transaction: every file
 * becomes a trashed file (file.deleted each, share links invalidated), every folder leaves the
 * tree. Restoring such a file later puts it in the root, since its folder is gone.
 */
@CommandHandler(DeleteFolderCommand)
export class DeleteFolderHandler implements ICommandHandler<DeleteFolderCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, folderId }: DeleteFolderCommand): Promise<DeletedFolderResponse> {
    return this.transactions.run(async (tx) => {
      await lockFolderTree(tx, actor.accountId);
      const folders = tx.getRepository(FolderEntity);
      // Locked for update while walked: an upload or folder creation into one of them waits, or is waited for (findFolderToFill).
      const lock = this.transactions.dialect.lockForUpdate<FolderEntity>();
      const root = await folders.findOne({ where: { id: folderId, accountId: actor.accountId, state: 'active' }, ...lock });
      if (!root) throw new NotFound('folder', folderId);
      const ids = [root.id];
      const seen = new Set(ids);
      for (let frontier = [root.id]; frontier.length > 0; ) {
        const children = await folders.find({ select: { id: true }, where: { accountId: actor.accountId, state: 'active', parentId: In(frontier) }, ...lock });
        // Never round a cycle (which moves made before folder-tree-lock.ts could leave behind) for ever.
        frontier = children.map((c) => c.id).filter((id) => !seen.has(id));
        for (const id of frontier) seen.add(id);
        ids.push(...frontier);
      }
      const now = this.clock.now();
      let filesDeleted = 0;
      for (let i = 0; i < ids.length; i += 500) {
        const chunk = ids.slice(i, i + 500);
        const files = await tx.getRepository(FileEntity).findBy({ accountId: actor.accountId, state: 'active', folderId: In(chunk) });
        filesDeleted += (await moveFilesToTrash(tx, files, actor.userId, now, this.config.trashRetentionDays)).length;
        await folders.update({ id: In(chunk), state: 'active' }, { state: 'trashed', deletedAt: now, modifiedAt: now });
      }
      return Object.assign(new DeletedFolderResponse(), {
        id: root.id,
        name: root.name,
        deleted_at: now.toISOString(),
        folders_deleted: ids.length,
        files_deleted: filesDeleted,
      });
    });
  }
}
