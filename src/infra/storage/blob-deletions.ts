import { Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { insertRows } from '../database/insert-rows.js';
import { sqlDialect } from '../database/sql-dialect.js';
import { Transactions } from '../database/transactions.js';
import { BlobStorage } from './blob-storage.js';

/** Keys per statement: two bound parameters each, well within SQLite's and PostgreSQL's limits. */
const KEYS_PER_STATEMENT = 500;
/** Deletes in flight at once: enough to keep the storage busy (libuv's threads, S3 round trips), few enough not to crowd other requests. */
const DELETES_IN_FLIGHT = 16;
/** A record this old is no longer its own transaction's to delete: the deletion after that commit failed, or never ran. */
const RETRY_AFTER_MS = 60_000;
/** Records read and retried at a time; a pass goes on until none is left. */
const RETRIES_PER_BATCH = 1_000;

/**
 * Blobs whose file rows are gone. Their keys are recorded in the transaction that removes the rows (`record`), and
 * deleted once it has committed (`deleteNow`), which drops each key's record as its blob goes. A store that fails the
 * delete (a bucket out of reach), or a process that dies before it, leaves the record, and the upload sweeper's
 * passes retry it (`retryPending`): bytes are never left behind where nothing points at them.
 */
@Injectable()
export class BlobDeletions {
  private readonly logger = new Logger('BlobDeletions');

  constructor(
    private readonly storage: BlobStorage,
    private readonly transactions: Transactions,
  ) {}

  static async record(tx: EntityManager, keys: string[], now: Date): Promise<void> {
    const recordedAt = now.toISOString();
    for (let i = 0; i < keys.length; i += KEYS_PER_STATEMENT) {
      await insertRows(tx, 'blob_deletions', keys.slice(i, i + KEYS_PER_STATEMENT).map((key) => ({ blob_key: key, recorded_at: recordedAt })));
    }
  }

  /** Deletes the blobs of records this caller's transaction made, after it committed; a failure only logs, the record stays. */
  async deleteNow(keys: string[]): Promise<void> {
    const deleted: string[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < keys.length) {
        const key = keys[next++];
        await this.storage.delete(key).then(
          () => deleted.push(key),
          (error: unknown) => this.logger.warn({ err: error, key }, 'Could not delete a blob; the sweeper will try again'),
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(DELETES_IN_FLIGHT, keys.length) }, worker));
    await this.forget(deleted).catch((error: unknown) => this.logger.warn({ err: error }, 'Could not drop the records of deleted blobs; the sweeper will'));
  }

  /** Deletes the blobs of records older than a minute (their deletion failed or never ran); answers how many went. */
  async retryPending(now: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const { found, deleted } = await this.retryBatch(now);
      total += deleted;
      // A short batch was the last. A store still failing throws out of the pass (its records wait for the next sweep).
      if (found < RETRIES_PER_BATCH) break;
    }
    if (total > 0) this.logger.warn({ blobs: total }, 'Deleted blobs whose deletion had failed');
    return total;
  }

  private async retryBatch(now: Date): Promise<{ found: number; deleted: number }> {
    const params = this.transactions.dialect.parameters();
    const before = params.add(new Date(now.getTime() - RETRY_AFTER_MS).toISOString());
    const pending: Array<{ blob_key: string }> = await this.transactions.dataSource.query(
      `SELECT blob_key FROM blob_deletions WHERE recorded_at < ${before} ORDER BY recorded_at LIMIT ${RETRIES_PER_BATCH}`,
      params.values,
    );
    const deleted: string[] = [];
    try {
      // A blob already gone counts as deleted (adapters ignore a missing key); a store still failing ends the batch.
      for (const { blob_key: key } of pending) {
        await this.storage.delete(key);
        deleted.push(key);
      }
    } finally {
      await this.forget(deleted);
    }
    return { found: pending.length, deleted: deleted.length };
  }

  private async forget(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += KEYS_PER_STATEMENT) {
      const chunk = keys.slice(i, i + KEYS_PER_STATEMENT);
      await this.transactions.run(async (tx) => {
        const params = sqlDialect(tx).parameters();
        await tx.query(`DELETE FROM blob_deletions WHERE blob_key IN (${chunk.map((key) => params.add(key)).join(', ')})`, params.values);
      });
    }
  }
}
