import { MigrationInterface, QueryRunner } from 'typeorm';
import { firstFreeName, nameKeyOf } from '../../../modules/files/file-naming.js';

/** Rows read per statement while looking for keys to rewrite. */
const BATCH = 5_000;

interface RekeyedRow {
  id: string;
  account_id: string;
  parent: string;
  name: string;
  state: string;
  /** ISO 8601 text: sorts as it reads. */
  created_at: string;
}

/**
 * Name keys now join every case form of a letter (nameKeyOf: `ΟΔΟΣ` and `οδος`, `İZMİR` and `İzmir`, `ILIK` and `ılık`),
 * where they were each character's lower case alone. The keys that change are rewritten; two active siblings that now
 * share a key keep both, the one whose key changed taking the numbered suffix (oldest first), as in UnicodeNames1764000000000.
 * Only the rows whose key changes are held in memory, and only their folders' keys are read.
 */
export class CaseFoldedNameKeys1764425000000 implements MigrationInterface {
  name = 'CaseFoldedNameKeys1764425000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await rekey(queryRunner, 'files', 'folder_key');
    await rekey(queryRunner, 'folders', 'parent_key');
  }

  async down(): Promise<void> {
    // The old rule never read the keys back; a name numbered here keeps its number.
  }
}

async function rekey(queryRunner: QueryRunner, table: 'files' | 'folders', parentColumn: 'folder_key' | 'parent_key'): Promise<void> {
  const postgres = queryRunner.connection.options.type === 'postgres';
  const at = (n: number) => (postgres ? `$${n}` : '?');
  const changing: string[] = [];
  for (let after = ''; ; ) {
    const rows: { id: string; name: string; name_key: string }[] = await queryRunner.query(
      `SELECT id, name, name_key FROM ${table} WHERE id > ${at(1)} ORDER BY id LIMIT ${BATCH}`,
      [after],
    );
    for (const row of rows) if (nameKeyOf(row.name) !== row.name_key) changing.push(row.id);
    if (rows.length < BATCH) break;
    after = rows[rows.length - 1]!.id;
  }
  const pending: RekeyedRow[] = [];
  for (let i = 0; i < changing.length; i += 500) {
    const ids = changing.slice(i, i + 500);
    pending.push(
      ...(await queryRunner.query(
        `SELECT id, account_id, ${parentColumn} AS parent, name, state, created_at FROM ${table} WHERE id IN (${ids.map((_, n) => at(n + 1)).join(', ')})`,
        ids,
      )),
    );
  }
  pending.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1));
  // A key the old rule made is never one the new rule makes (a new key is its own key; an old one that changes is not),
  // so the active siblings' keys as stored, old ones included, are exactly the names a rekeyed row must not take.
  const siblingKeys = new Map<string, Set<string>>();
  for (const row of pending) {
    let name = row.name;
    if (row.state === 'active') {
      const group = `${row.account_id}\u0000${row.parent}`;
      let keys = siblingKeys.get(group);
      if (!keys) {
        const siblings: { name_key: string }[] = await queryRunner.query(
          `SELECT name_key FROM ${table} WHERE account_id = ${at(1)} AND ${parentColumn} = ${at(2)} AND state = 'active'`,
          [row.account_id, row.parent],
        );
        siblingKeys.set(group, (keys = new Set(siblings.map((sibling) => sibling.name_key))));
      }
      name = firstFreeName(name, keys);
      keys.add(nameKeyOf(name));
    }
    await queryRunner.query(`UPDATE ${table} SET name = ${at(1)}, name_key = ${at(2)} WHERE id = ${at(3)}`, [name, nameKeyOf(name), row.id]);
  }
}
