import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { type SqlDialect, sqlDialect } from './sql-dialect.js';

/**
 * Runs units of work in a database transaction. SQLite has one connection, and TypeORM refuses a
 * second transaction on it while one is open, so on SQLite transactions take turns; PostgreSQL
 * runs them concurrently and relies on row locks and conditional updates.
 */
@Injectable()
export class Transactions {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly dataSource: DataSource) {}

  get dialect(): SqlDialect {
    return sqlDialect(this.dataSource);
  }

  run<T>(work: (tx: EntityManager) => Promise<T>): Promise<T> {
    if (this.dialect.concurrentTransactions) return this.dataSource.transaction(work);
    const result = this.queue.then(() => this.dataSource.transaction(work));
    this.queue = result.catch(() => undefined);
    return result;
  }
}
