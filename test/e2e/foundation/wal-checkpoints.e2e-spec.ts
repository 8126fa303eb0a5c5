import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../support/app-fixture.js';
import type { TestAccount } from '../../support/accounts.js';
import { TEST_DB, type TestApp } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { type SqliteConnection, openSqlite } from '../../support/sqlite.js';
import { uploadOk } from '../../support/uploads.js';

/**
 * SQLite only: the server's own connection never checkpoints the write-ahead log (that would stall
 * its event loop), yet what it commits still reaches the database file, checkpointed from a worker thread.
 */
describe('write-ahead log checkpoints on SQLite', () => {
  let t: TestApp;
  let owner: TestAccount;
  useTestApp((started) => ({ t, owner } = started));

  it('moves committed changes into the database file off the server connection', async (ctx) => {
    if (TEST_DB !== 'sqlite') ctx.skip('PostgreSQL has no write-ahead log checkpoints for the server to move off its connection');
    const connection = (t.app.get(DataSource).driver as unknown as { databaseConnection: SqliteConnection }).databaseConnection;
    expect(connection.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    const file = await uploadOk(t, owner.auth, 'checkpointed', { name: 'in-the-main-file.txt' });
    const databasePath = t.environment.env.DATABASE_URL.slice('sqlite:'.length);
    // A copy of the database file alone (no -wal beside it) holds only what was checkpointed.
    const found = await eventually(
      async () => {
        const copy = join(t.environment.workDir, `copy-${Date.now()}.sqlite`);
        copyFileSync(databasePath, copy);
        const db = openSqlite(copy, { readonly: true });
        try {
          return db.prepare('SELECT name FROM files WHERE id = ?').get(file.id) as { name: string } | undefined;
        } catch {
          return undefined; // a copy taken mid-checkpoint may be torn; the next one will do
        } finally {
          db.close();
        }
      },
      20_000,
      'the upload in the database file',
    );
    expect(found).toEqual({ name: 'in-the-main-file.txt' });
  });
});
