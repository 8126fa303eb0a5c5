import { type DataSource, type Migration, MigrationExecutor } from 'typeorm';
import { describeConnectionError } from '../connection-error.js';
import { sqlDialect } from './sql-dialect.js';

/** Pending migrations that could not be applied (a table of another application in the way); they run in one transaction, so none was. */
export class MigrationError extends Error {
  constructor(readonly reason: string) {
    super(`The database migrations could not be applied (${reason}); none was`);
    this.name = 'MigrationError';
  }
}

/**
 * Applies the pending migrations, one process at a time, in one transaction. The server and every CLI command migrate
 * at start, so two started together on a new database (replicas, a server and a command) would otherwise both apply
 * the first migration, and all but one would fail ("relation already exists", "database is locked").
 */
export async function applyMigrations(dataSource: DataSource): Promise<Migration[]> {
  const connection = dataSource.createQueryRunner();
  // Outside the transaction, as TypeORM does it: SQLite ignores `foreign_keys = OFF` inside one, and a migration that
  // rebuilds a table needs it off.
  await connection.beforeMigration();
  try {
    return await sqlDialect(dataSource).exclusiveTransaction(connection, 'schema-migrations', () => {
      // On the connection whose transaction holds the lock: what was applied is read there, after the wait.
      const executor = new MigrationExecutor(dataSource, connection);
      executor.transaction = 'all';
      return executor.executePendingMigrations();
    }).catch((error: unknown) => {
      throw new MigrationError(describeConnectionError(error));
    });
  } finally {
    await connection.afterMigration();
    await connection.release();
  }
}
