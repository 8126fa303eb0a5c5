import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';

const FILES = 100_000;

/** The list indexes keep a page fast however many files an account holds. */
describe('listing 100,000 files', () => {
  let t: TestApp;
  let owner: TestAccount;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createAccount(t.app);
    // One INSERT ... SELECT over a generated series: 100,000 rows in about a second on either database.
    // Every tenth file is trashed; sizes, names and times repeat so every sort has ties.
    const pg = t.config.database.kind === 'postgres';
    const n = pg ? 'i::bigint' : 'i';
    const iso = (seconds: string) =>
      pg ? `to_char(timestamp '2026-01-01' + (${seconds}) * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')` : `strftime('%Y-%m-%dT%H:%M:%fZ', 1767225600 + (${seconds}), 'unixepoch')`;
    const trashed = (yes: string, no: string) => `CASE WHEN ${n} % 10 = 0 THEN ${yes} ELSE ${no} END`;
    const select = `SELECT ${pg ? `'file_' || lpad(${n}::text, 32, '0')` : `printf('file_%032d', ${n})`}, '${owner.accountId}', NULL, '',
        'file-' || ((${n} * 7919) % ${FILES}) || '.txt', 'file-' || ((${n} * 7919) % ${FILES}) || '.txt', (${n} * 104729) % 5000,
        'text/plain', 'document', 'd41d8cd98f00b204e9800998ecf8427e', 'files/x/' || ${n}, ${trashed("'trashed'", "'active'")}, 'clean', NULL,
        '${owner.userId}', ${iso(`${n} / 3`)}, ${iso(`(${n} * 31) % ${FILES}`)}, ${trashed(iso('0'), 'NULL')}, NULL, ${trashed(iso('2592000'), 'NULL')}`;
    const columns = `(id, account_id, folder_id, folder_key, name, name_key, size, mime_type, category, md5, blob_key, state, scan_status,
        thumbnail_key, uploaded_by, created_at, modified_at, deleted_at, deleted_by, recoverable_until)`;
    await t.app.get(DataSource).query(
      pg
        ? `INSERT INTO files ${columns} ${select} FROM generate_series(0, ${FILES - 1}) AS i`
        : `WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < ${FILES - 1}) INSERT INTO files ${columns} ${select} FROM seq`,
    );
    await t.app.get(DataSource).query(t.config.database.kind === 'postgres' ? 'VACUUM ANALYZE files' : 'ANALYZE');
  }, 120_000);
  afterAll(() => t.close());

  it.each(['created_desc', 'created_asc', 'modified_desc', 'name_asc', 'size_desc'])('serves a page of 100 sorted by %s quickly, first page and deep', async (sort) => {
    // Page 100 skips 9,900 rows; offsets cost in proportion to their depth.
    for (const page of [1, 100]) {
      const url = `/v1/files?sort=${sort}&per_page=100&page=${page}`;
      // The first request warms the caches; the second is what a user paging through sees.
      await t.http().get(url).set(owner.auth);
      const started = performance.now();
      const res = await t.http().get(url).set(owner.auth);
      const elapsed = performance.now() - started;
      expect(res.status).toBe(200);
      expect(res.body.data).toHaveLength(100);
      expect(res.body.pagination.total_items).toBe(90_000);
      expect(elapsed, `${sort} page ${page}`).toBeLessThan(page === 1 ? 500 : 1000);
    }
  });

  it('searches the 90,000 active names quickly', async () => {
    const started = performance.now();
    const res = await t.http().get('/v1/files?search=file-4242&per_page=100').set(owner.auth);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeGreaterThan(0);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
