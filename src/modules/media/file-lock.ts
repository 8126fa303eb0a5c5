import type { EntityManager } from 'typeorm';
import { sqlDialect } from '../../infra/database/sql-dialect.js';
import { FileEntity } from '../files/file.entity.js';

/** Reads a file row for a decision that must not race an overwrite or delete: locked until the transaction ends. */
export function lockFile(tx: EntityManager, fileId: string): Promise<FileEntity | null> {
  return tx.getRepository(FileEntity).findOne({ where: { id: fileId }, ...sqlDialect(tx).lockForUpdate<FileEntity>() });
}
