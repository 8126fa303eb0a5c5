import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNode } from '../../support/processes.js';
import { openSqlite } from '../../support/sqlite.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';

/** Runs one statement on the environment's database (SQLite or PostgreSQL) and answers its rows. */
async function query(env: Record<string, string>, statement: string): Promise<unknown[]> {
  const url = env.DATABASE_URL;
  if (url.startsWith('sqlite:')) {
    const db = openSqlite(url.slice('sqlite:'.length));
    try {
      if (!/^\s*select/i.test(statement)) return (db.exec(statement), []);
      const row = db.prepare(statement).get();
      return row === undefined ? [] : [row];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(statement)).rows;
  } finally {
    await client.end();
  }
}

/**
 * DATABASE_URL pointed at a database that holds another application's tables: the first migration cannot create its
 * own. The operator is told where and why, without a stack trace, and the database is left as it was.
 */
describe('a database whose schema the migrations cannot bring up to date', () => {
  let environment: TestEnvironment;
  const tablesNamedFiles = () =>
    query(environment.env, environment.env.DATABASE_URL.startsWith('sqlite:') ? "SELECT name FROM sqlite_master WHERE name = 'files'" : "SELECT tablename FROM pg_tables WHERE tablename = 'files'");

  beforeAll(async () => {
    // PORT 0: were the migrations applied, the server would start on a free port rather than on 3000.
    environment = await createTestEnvironment({ PORT: '0' });
    await query(environment.env, 'CREATE TABLE accounts (customer_number integer)');
  });
  afterAll(() => environment.dispose());

  it('stops the server with a message naming DATABASE_URL and the reason, applying none of them', async () => {
    const result = await runNode('main.js', [], environment.env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^Cannot apply the migrations to the database at DATABASE_URL=\S+ \(.*"accounts" already exists\); none was applied, the database is as it was\.\n$/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(await tablesNamedFiles()).toEqual([]);
  });

  it.each([[['db', 'migrate']], [['accounts', 'create', '--name', 'Ada', '--plan', 'free']]])('refuses `%j` on the command line with the JSON error migration_failed', async (args) => {
    const result = await runNode('cli.js', args, environment.env);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr.trim().split('\n').pop()!).error).toEqual({
      code: 'migration_failed',
      message: expect.stringMatching(/^Cannot apply the migrations to the database at DATABASE_URL=\S+ \(.*"accounts" already exists\); none was applied/),
    });
    expect(await tablesNamedFiles()).toEqual([]);
  });
});
