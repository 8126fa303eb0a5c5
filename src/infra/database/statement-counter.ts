import { Logger as NestLogger } from '@nestjs/common';
import type { Logger } from 'typeorm';

/**
 * Statements and transactions this process sent to the database since it started, whoever sent
 * them (requests, workers, the relay). Read by the Prometheus metrics (`db_statements_total`,
 * `db_transactions_total`), so a benchmark can divide them by the work done.
 */
export const databaseCounts = { statements: 0, transactions: 0 };

const TRANSACTION_START = new Set(['START TRANSACTION', 'BEGIN TRANSACTION']);

/**
 * TypeORM's logger: counts every statement, and with `logStatements` (LOG_LEVEL=trace) logs each
 * one's SQL (never its parameters, which may hold key hashes and names) at trace level.
 */
export class StatementCounter implements Logger {
  private readonly logger = new NestLogger('Database');

  constructor(private readonly logStatements = false) {}

  logQuery(query: string): void {
    databaseCounts.statements++;
    if (TRANSACTION_START.has(query)) databaseCounts.transactions++;
    if (this.logStatements) this.logger.verbose({ sql: query }, 'statement');
  }

  logQueryError(error: string | Error, query: string): void {
    if (this.logStatements) this.logger.verbose({ sql: query, err: error }, 'statement failed');
  }

  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}
