import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import type { DatabaseConfig } from '../../config/app-config.js';
import { MIGRATIONS } from './migrations/index.js';
import { StatementCounter } from './statement-counter.js';

/**
 * TypeORM options for `DATABASE_URL`: embedded SQLite (better-sqlite3) or PostgreSQL. Schema changes only by
 * migrations; entities are registered by each module (`autoLoadEntities`). Every statement is counted
 * (StatementCounter); `logStatements` (LOG_LEVEL=trace) logs each one's SQL too.
 */
export function dataSourceOptions(database: DatabaseConfig, { logStatements = false } = {}): DataSourceOptions {
  const common = { migrations: MIGRATIONS, synchronize: false, migrationsRun: false, logging: false, logger: new StatementCounter(logStatements) } as const;
  if (database.kind === 'sqlite') {
    const path = database.path === ':memory:' ? ':memory:' : resolve(database.path);
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    return {
      ...common,
      type: 'better-sqlite3',
      database: path,
      // WAL lets readers proceed while a writer commits; the busy timeout rides out a second process's write.
      prepareDatabase: (db: { pragma(sql: string): unknown }) => {
        db.pragma('journal_mode = WAL');
        db.pragma('busy_timeout = 5000');
        db.pragma('foreign_keys = ON');
        db.pragma('synchronous = NORMAL');
      },
    };
  }
  return { ...common, type: 'postgres', url: database.url, extra: { max: 20, connectionTimeoutMillis: 5000 } };
}
