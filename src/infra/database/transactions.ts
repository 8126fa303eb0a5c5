import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, type QueryRunner } from 'typeorm';
import { type SqlDialect, sqlDialect } from './sql-dialect.js';

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
  /** SQLite only: whether a transaction holds the connection, and who waits for it (urgent ones first). */
  private busy = false;
  private readonly waiting: Array<() => void> = [];
  private readonly urgent: Array<() => void> = [];

  constructor(readonly dataSource: DataSource) {}

  get dialect(): SqlDialect {
    return sqlDialect(this.dataSource);
  }

  /**
   * Runs `work` in a transaction, again (after a short, growing pause) when the database refused it for
   * contention alone: on SQLite another process (the CLI) committed between this transaction's read and
   * its write, which the busy timeout cannot wait out; on PostgreSQL a serialization failure or deadlock.
   * Still refused after the last attempt, the error reaches the client as 503 with Retry-After.
   * So `work` may run more than once: it changes nothing outside the transaction (a cursor, a counter), but
   * answers what the caller should take on once it has committed.
   */
  run<T>(work: (tx: EntityManager) => Promise<T>): Promise<T> {
    return this.withRetries(work, false);
  }

  /**
   * As `run`, for a short batch of statements whose latency others wait on (the outbox relay): on SQLite
   * it takes the connection next, ahead of transactions already waiting, instead of queueing behind every
   * request in flight. Keep such work to a few statements with no other I/O inside. `connection` (from
   * `reserveConnection`) runs it on a connection of its own on PostgreSQL, not one the requests wait for.
   */
  runFirst<T>(work: (tx: EntityManager) => Promise<T>, connection?: QueryRunner): Promise<T> {
    return this.withRetries(work, true, connection);
  }

  /**
   * A connection for one long-lived worker (the outbox relay) to read on and pass to `runFirst`: on
   * PostgreSQL one taken from the pool and kept until `release()`, so a pool busy with requests never holds
   * the worker up; on SQLite the one connection (reads on it need no transaction, so no turn).
   */
  reserveConnection(): QueryRunner {
    return this.dataSource.createQueryRunner();
  }

  private async withRetries<T>(work: (tx: EntityManager) => Promise<T>, urgent: boolean, connection?: QueryRunner): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(work, urgent, connection);
      } catch (error) {
        if (attempt >= TRANSACTION_ATTEMPTS || !isDatabaseContention(error)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 10 * 2 ** attempt * (0.5 + Math.random())));
      }
    }
  }

  private async once<T>(work: (tx: EntityManager) => Promise<T>, urgent: boolean, connection?: QueryRunner): Promise<T> {
    if (this.dialect.concurrentTransactions) return (connection?.manager ?? this.dataSource.manager).transaction(work);
    await this.takeTurn(urgent);
    try {
      return await this.dataSource.transaction(async (tx) => {
        await tx.query(TAKE_WRITE_LOCK);
        return work(tx);
      });
    } finally {
      this.passTurn();
    }
  }

  private takeTurn(urgent: boolean): Promise<void> {
    if (!this.busy) {
      this.busy = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => (urgent ? this.urgent : this.waiting).push(resolve));
  }

  /** Hands the connection straight to the next waiter (urgent first), so no newcomer slips in between. */
  private passTurn(): void {
    const next = this.urgent.shift() ?? this.waiting.shift();
    if (next) next();
    else this.busy = false;
  }
}

const TRANSACTION_ATTEMPTS = 5;

/** SQLite: busy or locked (another process holds the write lock); PostgreSQL: serialization failure, deadlock, lock not available. */
const CONTENTION_CODES = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY', 'SQLITE_LOCKED', '40001', '40P01', '55P03']);

/** True when the database refused a statement only because of concurrent work, so the same work may succeed later. */
export function isDatabaseContention(error: unknown): boolean {
  const e = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  const code = e?.driverError?.code ?? e?.code;
  return typeof code === 'string' && CONTENTION_CODES.has(code);
}

/** True for a unique-index violation on SQLite or PostgreSQL. */
export function isUniqueViolation(error: unknown): boolean {
  const driverError = (error as { driverError?: { code?: string } } | null)?.driverError;
  const code = driverError?.code ?? (error as { code?: string } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
