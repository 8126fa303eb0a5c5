import type { EntityManager } from 'typeorm';
import { FileEntity } from '../files/file.entity.js';

/**
 * Reads a file row for a decision that must not race an overwrite or delete: on PostgreSQL the row is
 * locked (SELECT ... FOR UPDATE) until the transaction ends; SQLite transactions already take turns.
 */
export function lockFile(tx: EntityManager, fileId: string): Promise<FileEntity | null> {
  const sqlite = tx.connection.options.type === 'better-sqlite3';
  return tx.getRepository(FileEntity).findOne({ where: { id: fileId }, ...(sqlite ? {} : { lock: { mode: 'pessimistic_write' as const } }) });
}
