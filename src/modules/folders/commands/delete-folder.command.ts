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
import { activeSubtree } from '../folder-ancestry.js';
import { lockFolderTree } from '../folder-tree-lock.js';

/** Ids per statement: well below the bound-parameter limits of SQLite (32,766) and PostgreSQL (65,535). */
const IDS_PER_STATEMENT = 500;
/** Files trashed per batch. */
const FILES_PER_BATCH = 1_000;

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
      // Locked for update: an upload or folder creation into one of them waits, or is waited for (findFolderToFill).
      const lock = this.transactions.dialect.lockForUpdate<FolderEntity>();
      const root = await folders.findOne({ where: { id: folderId, accountId: actor.accountId, state: 'active' }, ...lock });
      if (!root) throw new NotFound('folder', folderId);
      // The subtree in one statement, then locked for update a chunk at a time, then found again: a folder created in
      // one of them before its lock was taken (the creation held it first) is in the second reading, and is locked in
      // turn. Once a reading finds nothing new, every folder of the subtree is locked and none can be added to it.
      const locked = new Set<string>();
      for (;;) {
        const found = (await activeSubtree(tx, actor.accountId, root.id)).filter((id) => !locked.has(id));
        if (found.length === 0) break;
        // (Where the database has no row locks, its transactions take turns: nothing to lock.)
        for (let i = 0; lock.lock && i < found.length; i += IDS_PER_STATEMENT) {
          await folders.find({ select: { id: true }, where: { id: In(found.slice(i, i + IDS_PER_STATEMENT)) }, ...lock });
        }
        for (const id of found) locked.add(id);
      }
      const ids = [...locked];
      const now = this.clock.now();
      let filesDeleted = 0;
      for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
        const chunk = ids.slice(i, i + IDS_PER_STATEMENT);
        // A batch at a time, never a whole folder of millions of files in memory; each batch leaves the active files.
        for (;;) {
          const files = await tx.getRepository(FileEntity).find({ where: { accountId: actor.accountId, state: 'active', folderKey: In(chunk) }, take: FILES_PER_BATCH });
          const moved = await moveFilesToTrash(tx, files, actor.userId, now, this.config.trashRetentionDays);
          filesDeleted += moved.length;
          if (files.length < FILES_PER_BATCH || moved.length === 0) break;
        }
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
