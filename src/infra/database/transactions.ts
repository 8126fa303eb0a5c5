import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';

/**
 * SQLite's `BEGIN` defers the write lock to the first write; a transaction that read first and then finds
 * that another process (a CLI command, a second server) wrote meanwhile fails at once with "database is
 * locked", busy timeout or not. A write that touches no row, as the first statement, takes the lock up
 * front and waits for it like `BEGIN IMMEDIATE`, which TypeORM cannot issue.
 */
const TAKE_WRITE_LOCK = 'UPDATE "migrations" SET "id" = "id" WHERE 0';

/**
 * Runs units of work in a database transaction. SQLite has one connection, and TypeORM refuses a
 * second transaction on it while one is open, so on SQLite transactions take turns; PostgreSQL
 * runs them concurrently and relies on row locks and conditional updates.
 */
@Injectable()
export class Transactions {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly dataSource: DataSource) {}

  get isSqlite(): boolean {
    return this.dataSource.options.type === 'better-sqlite3';
  }

  run<T>(work: (tx: EntityManager) => Promise<T>): Promise<T> {
    if (!this.isSqlite) return this.dataSource.transaction(work);
    const result = this.queue.then(() =>
      this.dataSource.transaction(async (tx) => {
        await tx.query(TAKE_WRITE_LOCK);
        return work(tx);
      }),
    );
    this.queue = result.catch(() => undefined);
    return result;
  }
}
