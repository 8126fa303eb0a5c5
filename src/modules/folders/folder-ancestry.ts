import type { EntityManager } from 'typeorm';
import { sqlDialect } from '../../infra/database/sql-dialect.js';

/**
 * The active folder `folderId` of the account and every active folder above it, each with its parent_id, in one
 * statement however deep the tree (a recursive query; neither database limits its depth). UNION, not UNION ALL: a ring
 * of folders (which moves made before folder-tree-lock.ts could leave behind) yields each row once and ends. Empty
 * when `folderId` names no active folder of the account.
 */
export async function activeAncestry(tx: EntityManager, accountId: string, folderId: string): Promise<Map<string, string | null>> {
  const params = sqlDialect(tx).parameters();
  const rows: { id: string; parent_id: string | null }[] = await tx.query(
    'WITH RECURSIVE ancestry (id, parent_id) AS (' +
      `SELECT id, parent_id FROM folders WHERE id = ${params.add(folderId)} AND account_id = ${params.add(accountId)} AND state = 'active'` +
      ' UNION SELECT f.id, f.parent_id FROM folders f JOIN ancestry a ON f.id = a.parent_id' +
      ` WHERE f.account_id = ${params.add(accountId)} AND f.state = 'active'` +
      ') SELECT id, parent_id FROM ancestry',
    params.values,
  );
  return new Map(rows.map((row) => [row.id, row.parent_id]));
}

/**
 * The ids of the active folder `folderId` of the account and of every active folder below it, in one statement however
 * deep or wide the tree (a recursive query along idx_folders_list). UNION, not UNION ALL: a ring of folders (see
 * activeAncestry) yields each row once and ends. Empty when `folderId` names no active folder of the account.
 */
export async function activeSubtree(tx: EntityManager, accountId: string, folderId: string): Promise<string[]> {
  const params = sqlDialect(tx).parameters();
  // The step joins on the account id carried in the row, not a parameter: given the account as a constant, SQLite
  // (3.53) walked every active folder of the account for each folder found, and a folder of 70,000 took minutes.
  const rows: { id: string }[] = await tx.query(
    'WITH RECURSIVE subtree (id, account_id) AS (' +
      `SELECT id, account_id FROM folders WHERE id = ${params.add(folderId)} AND account_id = ${params.add(accountId)} AND state = 'active'` +
      " UNION SELECT f.id, f.account_id FROM subtree s JOIN folders f ON f.account_id = s.account_id AND f.state = 'active' AND f.parent_key = s.id" +
      ') SELECT id FROM subtree',
    params.values,
  );
  return rows.map((row) => row.id);
}
