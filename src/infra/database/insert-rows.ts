import type { EntityManager } from 'typeorm';
import { sqlDialect } from './sql-dialect.js';

/**
 * Inserts rows by plain SQL, every column given as the table stores it (timestamps as ISO strings), so nothing
 * is read back. For rows written on every upload: TypeORM's insert builder (metadata walk, parameter renaming,
 * subscriber broadcast) cost more CPU there than the statement itself. All rows have the first row's columns.
 */
export async function insertRows(tx: EntityManager, table: string, rows: Array<Record<string, unknown>>): Promise<void> {
  if (rows.length === 0) return;
  const params = sqlDialect(tx).parameters();
  const columns = Object.keys(rows[0]);
  const values = rows.map((row) => `(${columns.map((column) => params.add(row[column])).join(', ')})`);
  await tx.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values.join(', ')}`, params.values);
}
