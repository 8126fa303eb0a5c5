import { DataSource } from 'typeorm';
import { type DatabaseConfig, withoutPassword } from '../../config/app-config.js';
import { describeConnectionError } from '../connection-error.js';
import { dataSourceOptions } from './data-source-options.js';

/**
 * Answers, within the driver's connection timeout, whether the database takes a connection now, or why not; used
 * before the server starts, so that an unreachable one is named at once rather than after Nest's nine retries.
 */
export async function probeDatabase(database: DatabaseConfig): Promise<string | null> {
  const dataSource = new DataSource({ ...dataSourceOptions(database), migrations: [] });
  try {
    await dataSource.initialize();
    return null;
  } catch (error) {
    return describeConnectionError(error);
  } finally {
    if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
  }
}

/** What the server and the CLI say when the database does not take a connection: where, without its password, and why. */
export function cannotOpenDatabase(database: DatabaseConfig, reason: string): string {
  return `Cannot open the database at DATABASE_URL=${shownDatabaseUrl(database)} (${reason})`;
}

/** What the server and the CLI say when the schema cannot be brought up to date (see MigrationError). */
export function cannotMigrateDatabase(database: DatabaseConfig, reason: string): string {
  return `Cannot apply the migrations to the database at DATABASE_URL=${shownDatabaseUrl(database)} (${reason}); none was applied, the database is as it was`;
}

function shownDatabaseUrl(database: DatabaseConfig): string {
  return database.kind === 'sqlite' ? `sqlite:${database.path}` : withoutPassword(database.url);
}
