import { Logger } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { Clock } from '../../../common/clock.js';
import { AppConfig } from '../../../config/app-config.js';
import type { SqlParameters } from '../../../infra/database/sql-dialect.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { BlobDeletions } from '../../../infra/storage/blob-deletions.js';
import { FileEntity } from '../../files/file.entity.js';
import { blobsOf, deleteFilesPermanently } from '../../files/file-removal.js';
import { expiredSql } from '../trash-window.js';

/** Files removed per transaction, by the purge and by emptying the trash. Defined here, not beside the trash's response DTOs, so `trash purge` on the command line never loads their OpenAPI decorators. */
export const PURGE_BATCH = 200;

export interface PurgeResult {
  purged: number;
  freed_bytes: number;
}

export class PurgeTrashCommand extends Command<PurgeResult> {
  /** `now` defaults to the clock; tests pass a later time to expire files without waiting. */
  constructor(readonly now?: Date) {
    super();
  }
}

/**
 * Deletes, for good, every trashed file whose recovery window has passed (all accounts), in
 * batches of small transactions with a pause between them so requests keep flowing. Each delete
 * is conditional (still trashed, still expired): a file restored meanwhile is never touched, and
 * when two processes purge at once, each file is deleted (and counted, and announced) by one only.
 */
@CommandHandler(PurgeTrashCommand)
export class PurgeTrashHandler implements ICommandHandler<PurgeTrashCommand> {
  private readonly logger = new Logger('TrashPurge');

  constructor(
    private readonly transactions: Transactions,
    private readonly blobDeletions: BlobDeletions,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async execute(command: PurgeTrashCommand): Promise<PurgeResult> {
    const now = command.now ?? this.clock.now();
    let purged = 0;
    let freed = 0;
    // A committed batch's blobs are unlinked while the next batch's transaction runs; never before the commit.
    let unlinking: Promise<void> = Promise.resolve();
    try {
      for (;;) {
        const result = await this.transactions.run(async (tx) => {
          const batch = await tx
            .getRepository(FileEntity)
            .createQueryBuilder('f')
            .select(['f.id', 'f.accountId', 'f.name', 'f.size', 'f.blobKey', 'f.thumbnailKey'])
            .where(`f.state = 'trashed' AND ${expiredSql('f.recoverable_until', ':now')}`, { now: now.toISOString() })
            // In the order of idx_files_purge, so each batch is a short index range, whatever the backlog.
            .orderBy('f.recoverable_until', 'ASC')
            .limit(PURGE_BATCH)
            .getMany();
          if (batch.length === 0) return null;
          return deleteFilesPermanently(tx, batch, 'system', now, { state: 'trashed', expiredBy: now });
        });
        await unlinking;
        // Deleted rows leave the range; rows a restore took away no longer match. A batch that deleted
        // nothing therefore means nothing deletable is left (and guards against looping forever).
        if (result === null || result.length === 0) break;
        purged += result.length;
        freed += result.reduce((sum, f) => sum + f.size, 0);
        unlinking = this.blobDeletions.deleteNow(result.flatMap(blobsOf));
        await yieldToEventLoop();
      }
    } finally {
      await unlinking;
    }
    const folders = await this.removeEmptiedFolders(now);
    if (purged > 0 || folders > 0) this.logger.log({ purged, freed_bytes: freed, folders }, 'Purged expired trash');
    return { purged, freed_bytes: freed };
  }

  /**
   * Deleted folders past the recovery window that nothing refers to any more: the purge has taken their files, and a
   * restored file went to the root. No one sees a deleted folder (restores never bring one back), so without this its
   * row stayed for good. A folder goes unless a file (active or trashed) is in it, or a folder that stays is: one
   * statement finds them however deep the tree (removableFoldersSql). Nothing starts referring to a deleted folder
   * again (uploads, moves and restores only go into active ones), so the ids found stay removable while they are
   * deleted, a batch per transaction; the DELETE checks the files and active children again all the same.
   */
  private async removeEmptiedFolders(now: Date): Promise<number> {
    const deletedBy = new Date(now.getTime() - this.config.trashRetentionDays * 24 * 3600 * 1000).toISOString();
    let removed = 0;
    for (;;) {
      const params = this.transactions.dialect.parameters();
      const sql = removableFoldersSql(params, deletedBy, FOLDERS_PER_ROUND);
      const found: { id: string }[] = await this.transactions.dataSource.query(sql, params.values);
      const removedBefore = removed;
      for (let i = 0; i < found.length; i += PURGE_BATCH) {
        const ids = found.slice(i, i + PURGE_BATCH).map((row) => row.id);
        removed += await this.transactions.run(async (tx) => {
          const batch = this.transactions.dialect.parameters();
          const list = ids.map((id) => batch.add(id)).join(', ');
          const result = await tx.queryRunner!.query(
            `DELETE FROM folders WHERE id IN (${list}) AND state = 'trashed'` +
              " AND NOT EXISTS (SELECT 1 FROM files x WHERE x.account_id = folders.account_id AND x.state IN ('active', 'trashed') AND x.folder_key = folders.id)" +
              " AND NOT EXISTS (SELECT 1 FROM folders c WHERE c.account_id = folders.account_id AND c.state = 'active' AND c.parent_key = folders.id) RETURNING id",
            batch.values,
            true,
          );
          return (result.records as unknown[]).length;
        });
        await yieldToEventLoop();
      }
      // A full round that removed nothing (its folders taken again meanwhile) would find them again: never loop on it.
      if (found.length < FOLDERS_PER_ROUND || removed === removedBefore) return removed;
    }
  }
}

/** Removable deleted folders read per round: the statement that finds them reads every deleted folder past its window once. */
const FOLDERS_PER_ROUND = 10_000;

/**
 * SQL: up to `limit` deleted folders, deleted at or before `deletedBy`, that hold nothing that stays. A folder stays
 * when a file (active or trashed) is in it, when a folder in it is active or deleted more recently, or when a folder in
 * it stays; the last is followed upward from the folders that stay of themselves, by parent, in one recursive query
 * (UNION: a ring of folders, which moves made before folder-tree-lock.ts could leave behind, is walked once). The
 * literal 'trashed' lets SQLite use the partial index idx_folders_trashed (migration 1764400000000).
 */
function removableFoldersSql(params: SqlParameters, deletedBy: string, limit: number): string {
  // Placeholders are numbered in the order they are added, which must be the order they appear in.
  const expired = () => `f.state = 'trashed' AND f.deleted_at <= ${params.add(deletedBy)}`;
  return (
    'WITH RECURSIVE staying (id, parent_key) AS (' +
    `SELECT f.id, f.parent_key FROM folders f WHERE ${expired()} AND (` +
    "EXISTS (SELECT 1 FROM files x WHERE x.account_id = f.account_id AND x.state IN ('active', 'trashed') AND x.folder_key = f.id)" +
    " OR EXISTS (SELECT 1 FROM folders c WHERE c.account_id = f.account_id AND c.state IN ('active', 'trashed') AND c.parent_key = f.id" +
    ` AND (c.state = 'active' OR c.deleted_at > ${params.add(deletedBy)})))` +
    ` UNION SELECT f.id, f.parent_key FROM staying s JOIN folders f ON f.id = s.parent_key WHERE ${expired()}` +
    // An anti-join, not NOT IN: PostgreSQL hashes it however many folders stay, SQLite indexes the CTE for it.
    `) SELECT f.id FROM folders f LEFT JOIN staying s ON s.id = f.id WHERE ${expired()} AND s.id IS NULL LIMIT ${params.add(limit)}`
  );
}
