import type { EntityManager } from 'typeorm';
import { sqlDialect } from '../../infra/database/sql-dialect.js';
import { FolderEntity } from './folder.entity.js';

/**
 * Moves and deletions of one account's folders take turns until their transactions end. Each reads the tree as it
 * is: two moves at once (A into B, B into A) would each find no cycle and make one, and a move into a folder being
 * deleted would leave the moved folder active inside the trash.
 */
export function lockFolderTree(tx: EntityManager, accountId: string): Promise<void> {
  return sqlDialect(tx).takeTurnsOn(tx, `folder-tree:${accountId}`);
}

/**
 * The active folder `folderId` of the account, to put a file or folder into (or move a file out of): kept from being deleted until the
 * transaction ends. A deletion locks the folders of its subtree for update while it walks it, so either it waits for
 * this transaction and then finds the new row, or this one waits for it and finds the folder gone (null).
 */
export function findFolderToFill(tx: EntityManager, accountId: string, folderId: string): Promise<FolderEntity | null> {
  return tx.getRepository(FolderEntity).findOne({ where: { id: folderId, accountId, state: 'active' }, ...sqlDialect(tx).lockForKeyShare<FolderEntity>() });
}
