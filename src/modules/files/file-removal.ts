import { type DeleteQueryBuilder, type EntityManager, In, IsNull, type UpdateQueryBuilder } from 'typeorm';
import { sqlDialect } from '../../infra/database/sql-dialect.js';
import { Outbox } from '../../infra/outbox/outbox.js';
import { BlobDeletions } from '../../infra/storage/blob-deletions.js';
import { ShareEntity } from '../shares/share.entity.js';
import { expiredSql } from '../trash/trash-window.js';
import { fileDeleted } from './events/file-events.js';
import { FileEntity } from './file.entity.js';
import { changeStorageUsage } from './storage-usage.js';

/**
 * The two ways a file leaves the active state, shared by files, folders and trash. Both are
 * conditional on the state the caller saw, so a concurrent restore, purge or delete can never make
 * one file change twice; both invalidate the file's share links in the same transaction.
 */

export const MS_PER_DAY = 86_400_000;

export function recoverableUntil(deletedAt: Date, retentionDays: number): Date {
  return new Date(deletedAt.getTime() + Math.round(retentionDays * MS_PER_DAY));
}

async function invalidateShares(tx: EntityManager, fileIds: string[], now: Date): Promise<void> {
  for (let i = 0; i < fileIds.length; i += IDS_PER_STATEMENT) {
    await tx.getRepository(ShareEntity).update({ fileId: In(fileIds.slice(i, i + IDS_PER_STATEMENT)), invalidatedAt: IsNull() }, { invalidatedAt: now });
  }
}

/**
 * Moves active files to the trash. Returns the files that were moved (others changed meanwhile).
 * Set-based, in chunks of ids: a folder of thousands of files is a few statements, each within the
 * databases' bound-parameter limits (its file.deleted events included).
 */
export async function moveFilesToTrash(
  tx: EntityManager,
  files: FileEntity[],
  deletedBy: string,
  now: Date,
  retentionDays: number,
): Promise<FileEntity[]> {
  const moved: FileEntity[] = [];
  const until = recoverableUntil(now, retentionDays);
  for (let i = 0; i < files.length; i += IDS_PER_STATEMENT) {
    const chunk = files.slice(i, i + IDS_PER_STATEMENT);
    const query = tx
      .createQueryBuilder()
      .update(FileEntity)
      .set({ state: 'trashed', deletedAt: now, deletedBy, recoverableUntil: until })
      .where('id IN (:...ids)', { ids: chunk.map((f) => f.id) })
      // As in deleteFilesPermanently: the rows are found by id, not by walking the state's index on SQLite.
      .andWhere(`${sqlDialect(tx).notIndexed('state')} = 'active'`);
    const trashed = new Set((await writeReturning<{ id: string }>(tx, query, 'id')).map((row) => row.id));
    const movedNow = chunk.filter((file) => trashed.has(file.id));
    for (const file of movedNow) Object.assign(file, { state: 'trashed', deletedAt: now, deletedBy, recoverableUntil: until });
    await invalidateShares(
      tx,
      movedNow.map((f) => f.id),
      now,
    );
    await Outbox.record(tx, ...movedNow.map((file) => fileDeleted(file, deletedBy, now, false)));
    moved.push(...movedNow);
  }
  return moved;
}

/**
 * Deletes file rows for good and frees their storage. `condition` narrows which rows may go
 * (e.g. the purge only takes files still trashed and expired). Set-based: one conditional DELETE
 * per chunk of ids, one storage update per account, one outbox insert. Their blobs are recorded for
 * deletion in the same transaction; the caller deletes them (BlobDeletions.deleteNow) after it commits.
 */
export async function deleteFilesPermanently(
  tx: EntityManager,
  files: FileEntity[],
  deletedBy: string,
  now: Date,
  condition: { state: 'active' | 'trashed' | 'any'; expiredBy?: Date },
): Promise<FileEntity[]> {
  const gone = new Map<string, DeletedRow>();
  for (let i = 0; i < files.length; i += IDS_PER_STATEMENT) {
    const ids = files.slice(i, i + IDS_PER_STATEMENT).map((f) => f.id);
    const query = tx.createQueryBuilder().delete().from(FileEntity).where('id IN (:...ids)', { ids });
    // The conditions check the rows found by id: SQLite must not walk idx_files_purge (every trashed row) instead.
    const column = (name: string) => sqlDialect(tx).notIndexed(name);
    if (condition.state !== 'any') query.andWhere(`${column('state')} = :state`, { state: condition.state });
    if (condition.expiredBy) query.andWhere(expiredSql(column('recoverable_until'), ':expiredBy'), { expiredBy: condition.expiredBy.toISOString() });
    for (const row of await writeReturning<DeletedRow>(tx, query, 'id, size, name, blob_key, thumbnail_key')) gone.set(row.id, row);
  }
  // What an active file holds may have changed since the caller read it (an overwrite, a rename): the row as deleted says.
  const deleted = files
    .filter((file) => gone.has(file.id))
    .map((file) => {
      const row = gone.get(file.id)!;
      return Object.assign(file, { size: Number(row.size), name: row.name, blobKey: row.blob_key, thumbnailKey: row.thumbnail_key });
    });
  await invalidateShares(
    tx,
    deleted.map((f) => f.id),
    now,
  );
  const freedByAccount = new Map<string, number>();
  for (const file of deleted) freedByAccount.set(file.accountId, (freedByAccount.get(file.accountId) ?? 0) + file.size);
  for (const [accountId, freed] of freedByAccount) await changeStorageUsage(tx, accountId, { used: -freed }, now);
  await Outbox.record(tx, ...deleted.map((file) => fileDeleted(file, deletedBy, now, true)));
  await BlobDeletions.record(tx, deleted.flatMap(blobsOf), now);
  return deleted;
}

interface DeletedRow {
  id: string;
  /** A string from PostgreSQL's bigint. */
  size: number | string;
  name: string;
  blob_key: string;
  thumbnail_key: string | null;
}

/** Well below the bound-parameter limits of SQLite (32,766) and PostgreSQL (65,535). */
const IDS_PER_STATEMENT = 1_000;

/**
 * Runs a DELETE or UPDATE and answers the rows it removed or changed. TypeORM emits RETURNING for
 * PostgreSQL only; SQLite has it too (3.35 and later), so it is appended here, the same on both.
 */
async function writeReturning<T>(tx: EntityManager, query: DeleteQueryBuilder<FileEntity> | UpdateQueryBuilder<FileEntity>, columns: string): Promise<T[]> {
  if (!tx.queryRunner) throw new Error('writeReturning runs inside a transaction');
  const [sql, parameters] = query.getQueryAndParameters();
  const result = await tx.queryRunner.query(`${sql} RETURNING ${columns}`, parameters, true);
  return result.records as T[];
}

/** Every blob a file holds (content and thumbnail). */
export function blobsOf(file: FileEntity): string[] {
  return [file.blobKey, file.thumbnailKey].filter((key): key is string => !!key);
}
