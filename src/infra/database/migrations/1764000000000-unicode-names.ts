import { MigrationInterface, QueryRunner } from 'typeorm';
import { firstFreeName, nameKeyOf } from '../../../modules/files/file-naming.js';

interface NamedRow {
  id: string;
  account_id: string;
  parent: string;
  name: string;
  name_key: string;
  state: string;
}

/**
 * Names are stored in Unicode NFC and compared by a lower-casing that never lengthens them (see
 * nameKeyOf). Existing names and keys are rewritten to that form. Two active siblings that become
 * one name (`café` composed and decomposed) keep both: a name already stored in NFC keeps its name,
 * and the one rewritten takes the numbered suffix, as a new item would (oldest first). No schema change: keys now always fit the existing varchar(255).
 */
export class UnicodeNames1764000000000 implements MigrationInterface {
  name = 'UnicodeNames1764000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await renormalize(queryRunner, 'files', 'folder_key');
    await renormalize(queryRunner, 'folders', 'parent_key');
  }

  async down(): Promise<void> {
    // NFC names and their keys are valid under the previous rules too; nothing to undo.
  }
}

async function renormalize(queryRunner: QueryRunner, table: 'files' | 'folders', parentColumn: 'folder_key' | 'parent_key'): Promise<void> {
  const postgres = queryRunner.connection.options.type === 'postgres';
  const at = (n: number) => (postgres ? `$${n}` : '?');
  const rows: NamedRow[] = await queryRunner.query(
    `SELECT id, account_id, ${parentColumn} AS parent, name, name_key, state FROM ${table} ORDER BY created_at, id`,
  );
  const siblingKeys = new Map<string, Set<string>>();
  const keysOf = (row: NamedRow) => {
    const group = `${row.account_id}\u0000${row.parent}`;
    let keys = siblingKeys.get(group);
    if (!keys) siblingKeys.set(group, (keys = new Set()));
    return keys;
  };
  const changed: Array<{ id: string; name: string; key: string }> = [];
  const pending: NamedRow[] = [];
  for (const row of rows) {
    const name = row.name.normalize('NFC');
    if (name === row.name && nameKeyOf(name) === row.name_key) {
      if (row.state === 'active') keysOf(row).add(row.name_key);
    } else {
      pending.push(row);
    }
  }
  for (const row of pending) {
    let name = row.name.normalize('NFC');
    if (row.state === 'active') {
      const keys = keysOf(row);
      name = firstFreeName(name, keys);
      keys.add(nameKeyOf(name));
    }
    changed.push({ id: row.id, name, key: nameKeyOf(name) });
  }
  // Two steps, so no row ever holds a key another row is about to give up (the active-name index is unique).
  for (const row of changed) {
    await queryRunner.query(`UPDATE ${table} SET name_key = ${at(1)} WHERE id = ${at(2)}`, [`\u2063${row.id}`, row.id]);
  }
  for (const row of changed) {
    await queryRunner.query(`UPDATE ${table} SET name = ${at(1)}, name_key = ${at(2)} WHERE id = ${at(3)}`, [row.name, row.key, row.id]);
  }
}
