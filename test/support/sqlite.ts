import { createRequire } from 'node:module';

/** A direct connection to a test's SQLite file, beside the service's own, for what a test must do from outside it. */
export interface SqliteConnection {
  pragma(sql: string, options?: { simple: boolean }): unknown;
  prepare(sql: string): { get(...values: unknown[]): unknown };
  exec(sql: string): void;
  close(): void;
}

// The driver TypeORM uses (it ships no types of its own).
const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string, options?: { readonly?: boolean }) => SqliteConnection;

export function openSqlite(path: string, options?: { readonly?: boolean }): SqliteConnection {
  return new Database(path, options);
}
