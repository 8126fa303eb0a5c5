import type { EntityManager } from 'typeorm';
import { sqlDialect } from '../../infra/database/sql-dialect.js';

/**
 * Moves and deletions of one account's folders take turns until their transactions end. Each reads the tree as it
 * is: two moves at once (A into B, B into A) would each find no cycle and make one, and a move into a folder being
 * deleted would leave the moved folder active inside the trash.
 */
export function lockFolderTree(tx: EntityManager, accountId: string): Promise<void> {
  return sqlDialect(tx).takeTurnsOn(tx, `folder-tree:${accountId}`);
}
