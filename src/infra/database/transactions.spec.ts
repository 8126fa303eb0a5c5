import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { Transactions } from './transactions.js';

/** A real SQLite database (in memory), where transactions take turns on the one connection. */
describe('Transactions on SQLite', () => {
  let dataSource: DataSource;
  let transactions: Transactions;

  beforeEach(async () => {
    dataSource = await new DataSource({ type: 'better-sqlite3', database: ':memory:' }).initialize();
    await dataSource.query('CREATE TABLE migrations (id integer PRIMARY KEY)');
    await dataSource.query('CREATE TABLE log (n integer PRIMARY KEY AUTOINCREMENT, what text)');
    transactions = new Transactions(dataSource);
  });
  afterEach(async () => {
    await dataSource.destroy();
  });

  const write = (what: string) => transactions.run((tx) => tx.query('INSERT INTO log (what) VALUES (?)', [what]));
  const writeFirst = (what: string) => transactions.runFirst((tx) => tx.query('INSERT INTO log (what) VALUES (?)', [what]));

  it('runs a runFirst transaction before transactions already waiting, after the one in progress', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = transactions.run(async (tx) => {
      await tx.query(`INSERT INTO log (what) VALUES ('in progress')`);
      await held;
    });
    const waiting = [write('waiting 1'), write('waiting 2')];
    const urgent = writeFirst('urgent');
    release();
    await Promise.all([first, ...waiting, urgent]);
    const order = (await dataSource.query('SELECT what FROM log ORDER BY n')) as Array<{ what: string }>;
    expect(order.map((r) => r.what)).toEqual(['in progress', 'urgent', 'waiting 1', 'waiting 2']);
  });

  it('keeps taking turns after a transaction fails', async () => {
    const failing = transactions.run(async () => {
      throw new Error('refused');
    });
    await expect(failing).rejects.toThrow('refused');
    await Promise.all([write('a'), writeFirst('b'), write('c')]);
    const rows = (await dataSource.query('SELECT what FROM log ORDER BY n')) as Array<{ what: string }>;
    expect(rows.map((r) => r.what).sort()).toEqual(['a', 'b', 'c']);
  });
});
