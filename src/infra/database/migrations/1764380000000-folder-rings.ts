import { MigrationInterface, QueryRunner } from 'typeorm';
import { firstFreeName, nameKeyOf } from '../../../modules/files/file-naming.js';

interface FolderRow {
  id: string;
  account_id: string;
  parent_id: string | null;
  name: string;
  state: string;
}

/**
 * Concurrent folder moves on PostgreSQL, before moves took turns (folder-tree-lock.ts), could close a ring (A in B,
 * B in C, C in A) that no path from the root reaches: its folders and their files vanished from listings while still
 * counting toward storage. Each ring is opened by moving its oldest folder to the root (numbered if an active root
 * folder has its name); a folder whose parent no longer exists goes to the root too. Reachable folders do not move.
 */
export class FolderRings1764380000000 implements MigrationInterface {
  name = 'FolderRings1764380000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const postgres = queryRunner.connection.options.type === 'postgres';
    const at = (n: number) => (postgres ? `$${n}` : '?');
    const unreachable: FolderRow[] = await queryRunner.query(
      `WITH RECURSIVE reachable(id) AS (
         SELECT id FROM folders WHERE parent_id IS NULL
         UNION
         SELECT f.id FROM folders f JOIN reachable r ON f.parent_id = r.id
       )
       SELECT f.id, f.account_id, f.parent_id, f.name, f.state FROM folders f
       WHERE NOT EXISTS (SELECT 1 FROM reachable r WHERE r.id = f.id)
       ORDER BY f.created_at, f.id`,
    );
    if (unreachable.length === 0) return;
    const byId = new Map(unreachable.map((row) => [row.id, row]));
    const toRoot = new Set<string>();
    // Oldest first: walking up from a folder either meets a folder that is gone (the top of its branch goes to the root),
    // comes round to a folder of this walk (a ring: its oldest folder goes), or reaches a folder already dealt with.
    const done = new Set<string>();
    for (const start of unreachable) {
      const walk: FolderRow[] = [];
      const onWalk = new Set<string>();
      let row: FolderRow | undefined = start;
      while (row && !done.has(row.id) && !onWalk.has(row.id)) {
        walk.push(row);
        onWalk.add(row.id);
        const parent: FolderRow | undefined = row.parent_id === null ? undefined : byId.get(row.parent_id);
        if (!parent) toRoot.add(row.id);
        row = parent;
      }
      if (row && onWalk.has(row.id)) {
        const ring = walk.slice(walk.findIndex((member) => member.id === row!.id));
        toRoot.add(ring.reduce((oldest, member) => (unreachable.indexOf(member) < unreachable.indexOf(oldest) ? member : oldest)).id);
      }
      for (const member of walk) done.add(member.id);
    }
    const rootKeys = new Map<string, Set<string>>();
    for (const id of toRoot) {
      const folder = byId.get(id)!;
      let name = folder.name;
      if (folder.state === 'active') {
        let keys = rootKeys.get(folder.account_id);
        if (!keys) {
          const rows: Array<{ name_key: string }> = await queryRunner.query(
            `SELECT name_key FROM folders WHERE account_id = ${at(1)} AND parent_id IS NULL AND state = 'active'`,
            [folder.account_id],
          );
          rootKeys.set(folder.account_id, (keys = new Set(rows.map((r) => r.name_key))));
        }
        name = firstFreeName(folder.name, keys);
        keys.add(nameKeyOf(name));
      }
      await queryRunner.query(`UPDATE folders SET parent_id = NULL, parent_key = '', name = ${at(1)}, name_key = ${at(2)} WHERE id = ${at(3)}`, [
        name,
        nameKeyOf(name),
        id,
      ]);
    }
  }

  async down(): Promise<void> {
    // Nothing to undo: the folders moved to the root are where a user would have moved them.
  }
}
