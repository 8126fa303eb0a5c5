import { type EntityManager, In, IsNull } from 'typeorm';
import { Outbox } from '../../infra/outbox/outbox.js';
import { ShareEntity } from '../shares/share.entity.js';
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
  if (fileIds.length === 0) return;
  await tx.getRepository(ShareEntity).update({ fileId: In(fileIds), invalidatedAt: IsNull() }, { invalidatedAt: now });
}

/** Moves active files to the trash. Returns the files that were moved (others changed meanwhile). */
export async function moveFilesToTrash(
  tx: EntityManager,
  files: FileEntity[],
  deletedBy: string,
  now: Date,
  retentionDays: number,
): Promise<FileEntity[]> {
  const moved: FileEntity[] = [];
  const until = recoverableUntil(now, retentionDays);
  for (const file of files) {
    const result = await tx
      .getRepository(FileEntity)
      .update({ id: file.id, state: 'active' }, { state: 'trashed', deletedAt: now, deletedBy, recoverableUntil: until });
    if (!result.affected) continue;
    Object.assign(file, { state: 'trashed', deletedAt: now, deletedBy, recoverableUntil: until });
    moved.push(file);
  }
  await invalidateShares(
    tx,
    moved.map((f) => f.id),
    now,
  );
  await Outbox.record(tx, ...moved.map((file) => fileDeleted(file, deletedBy, now, false)));
  return moved;
}

/**
 * Deletes file rows for good and frees their storage. `condition` narrows which rows may go
 * (e.g. the purge only takes files still trashed and expired). The blobs are the caller's to
 * delete, after the transaction commits.
 */
export async function deleteFilesPermanently(
  tx: EntityManager,
  files: FileEntity[],
  deletedBy: string,
  now: Date,
  condition: { state: 'active' | 'trashed' | 'any'; expiredBy?: Date },
): Promise<FileEntity[]> {
  const deleted: FileEntity[] = [];
  for (const file of files) {
    const query = tx.createQueryBuilder().delete().from(FileEntity).where('id = :id', { id: file.id });
    if (condition.state !== 'any') query.andWhere('state = :state', { state: condition.state });
    if (condition.expiredBy) query.andWhere('recoverable_until <= :expiredBy', { expiredBy: condition.expiredBy.toISOString() });
    const result = await query.execute();
    if (result.affected) deleted.push(file);
  }
  await invalidateShares(
    tx,
    deleted.map((f) => f.id),
    now,
  );
  const freedByAccount = new Map<string, number>();
  for (const file of deleted) freedByAccount.set(file.accountId, (freedByAccount.get(file.accountId) ?? 0) + file.size);
  for (const [accountId, freed] of freedByAccount) await changeStorageUsage(tx, accountId, { used: -freed }, now);
  await Outbox.record(tx, ...deleted.map((file) => fileDeleted(file, deletedBy, now, true)));
  return deleted;
}

/** Every blob a file holds (content and thumbnail). */
export function blobsOf(file: FileEntity): string[] {
  return [file.blobKey, file.thumbnailKey].filter((key): key is string => !!key);
}
