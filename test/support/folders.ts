import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { newId } from '../../src/common/ids.js';
import { insertRows } from '../../src/infra/database/insert-rows.js';
import type { TestAccount } from './accounts.js';

/**
 * A chain of `depth` active folders under `topId`, each inside the one before ("Level 0", "Level 1", ...), written
 * straight to the database: thousands of levels through the API would take minutes. Answers their ids, top first.
 */
export async function insertFolderChain(app: INestApplicationContext, account: TestAccount, topId: string, depth: number): Promise<string[]> {
  const now = new Date().toISOString();
  const rows: Array<Record<string, unknown>> = [];
  let parent = topId;
  for (let level = 0; level < depth; level++) {
    const id = newId('fld');
    rows.push({
      id, account_id: account.accountId, parent_id: parent, parent_key: parent, name: `Level ${level}`, name_key: `level ${level}`, state: 'active',
      created_by: account.userId, created_at: now, modified_at: now, deleted_at: null,
    });
    parent = id;
  }
  await app.get(DataSource).transaction(async (tx) => {
    for (let i = 0; i < rows.length; i += 1_000) await insertRows(tx, 'folders', rows.slice(i, i + 1_000));
  });
  return rows.map((row) => row.id as string);
}
