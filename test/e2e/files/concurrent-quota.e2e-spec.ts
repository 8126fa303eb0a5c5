import type { INestApplicationContext } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../support/accounts.js';
import { storageOf } from '../../support/files.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { type ServerProcess, startServerProcess } from '../../support/processes.js';
import { createTestEnvironment, type TestDatabase, type TestEnvironment } from '../../support/test-app.js';
import { listBlobsIn, upload } from '../../support/uploads.js';
import { eventually } from '../../support/time.js';
import { DataSource } from 'typeorm';
import { UploadReservationEntity } from '../../../src/modules/files/upload/upload-reservation.entity.js';

// Quota is enforced in the database, whose locking differs: both run here, whichever TEST_DB this run has.
describe.each<[TestDatabase, number]>([
  ['sqlite', 1],
  ['sqlite', 2],
  ['postgres', 1],
  ['postgres', 2],
])('concurrent uploads against a small quota (%s, %i server processes)', (database, processes) => {
  let environment: TestEnvironment;
  let context: INestApplicationContext;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    environment = await createTestEnvironment({}, { database });
    for (let i = 0; i < processes; i++) servers.push(await startServerProcess(environment.env));
    context = await startOperatorContext(environment.env);
  });
  afterAll(async () => {
    for (const server of servers) await server.stop();
    await context?.close();
    await environment?.dispose();
  });

  it('never lets concurrent uploads overshoot the quota', async () => {
    const small = await createAccount(context, { storageLimit: 1_000_000 });
    // Ten uploads of 300 kB, spread over the processes: exactly three fit.
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => upload(servers[i % servers.length], small.auth, Buffer.alloc(300_000, i), { name: `c${i}.bin` })));
    expect(results.filter((r) => r.status === 200), JSON.stringify(results.map((r) => [r.status, r.body.error?.code, r.body.error?.details]))).toHaveLength(3);
    expect(results.filter((r) => r.status !== 200).map((r) => [r.status, r.body.error.code])).toEqual(Array(7).fill([413, 'storage_exceeded']));
    expect(await storageOf(context, small.accountId)).toEqual({ used: 900_000, reserved: 0, sumOfFiles: 900_000 });
    expect(listBlobsIn(environment.env.STORAGE_DIR, `files/${small.accountId}`)).toHaveLength(3);
    expect(listBlobsIn(environment.env.STORAGE_DIR, 'tmp')).toEqual([]);
  }, 60_000);

  it('updates the account row once per small upload', async () => {
    const owner = await createAccount(context, { storageLimit: 1_000_000 });
    const ds = context.get(DataSource);
    // Every update of the account's row, counted as it happens by a trigger (PostgreSQL's own statistics reach
    // pg_stat_user_tables only seconds after each backend goes idle).
    await ds.query('CREATE TABLE account_row_updates (account_id varchar(40) NOT NULL)');
    if (database === 'postgres') {
      await ds.query(`CREATE FUNCTION count_account_row_update() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO account_row_updates VALUES (NEW.id); RETURN NEW; END $$`);
      await ds.query('CREATE TRIGGER count_account_row_updates AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION count_account_row_update()');
    } else {
      await ds.query('CREATE TRIGGER count_account_row_updates AFTER UPDATE ON accounts BEGIN INSERT INTO account_row_updates VALUES (NEW.id); END');
    }
    try {
      await Promise.all(Array.from({ length: 8 }, (_, i) => upload(servers[i % servers.length], owner.auth, Buffer.alloc(1_000, i), { name: `once-${i}.bin` })));
      expect((await storageOf(context, owner.accountId)).used).toBe(8_000);
      // Before, each upload updated it twice (reserve, then reserved to used at commit).
      const updates: { account_id: string }[] = await ds.query('SELECT account_id FROM account_row_updates');
      expect(updates.filter((row) => row.account_id === owner.accountId)).toHaveLength(8);
    } finally {
      if (database === 'postgres') {
        await ds.query('DROP TRIGGER count_account_row_updates ON accounts');
        await ds.query('DROP FUNCTION count_account_row_update()');
      } else {
        await ds.query('DROP TRIGGER count_account_row_updates');
      }
      await ds.query('DROP TABLE account_row_updates');
    }
  }, 90_000);

  it('frees what a file holds when its permanent deletion races an overwrite that grows it', async () => {
    const owner = await createAccount(context);
    for (let round = 0; round < 10; round++) {
      const name = `grows-${round}.bin`;
      const first = await upload(servers[0], owner.auth, Buffer.alloc(100, round), { name });
      expect(first.status).toBe(200);
      const [overwrite, deletion] = await Promise.all([
        upload(servers[round % servers.length], owner.auth, Buffer.alloc(1_000, round), { name, overwrite: true }),
        fetch(`${servers[(round + 1) % servers.length].baseUrl}/v1/files/${first.body.data.id}?permanent=true`, { method: 'DELETE', headers: owner.auth }),
      ]);
      expect([overwrite.status, deletion.status]).toEqual([200, 200]);
      const stored = await storageOf(context, owner.accountId);
      expect(stored, `round ${round}`).toEqual({ used: stored.sumOfFiles, reserved: 0, sumOfFiles: stored.sumOfFiles });
    }
    // Each round left the overwrite's file (when it came second) or nothing; no blob outlived its row.
    const files = (await fetch(`${servers[0].baseUrl}/v1/files?per_page=100`, { headers: owner.auth }).then((r) => r.json())) as { data: unknown[] };
    await eventually(async () => listBlobsIn(environment.env.STORAGE_DIR, `files/${owner.accountId}`).length === files.data.length, 20_000, 'replaced blobs to be removed');
  }, 90_000);

  it('takes 32 concurrent small uploads into one account, new files and overwrites, without ever storing more than the quota', async () => {
    // One file to overwrite, then room for 10 new files of 1,000 bytes and one 500-byte growth: 24 new files and 8 overwrites compete.
    const limit = 1_000 + 10_000 + 1_200;
    const owner = await createAccount(context, { storageLimit: limit });
    expect((await upload(servers[0], owner.auth, Buffer.alloc(1_000, 1), { name: 'shared.bin' })).status).toBe(200);
    const results = await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        i % 4 === 0
          ? upload(servers[i % servers.length], owner.auth, Buffer.alloc(1_500, i), { name: 'shared.bin', overwrite: true })
          : upload(servers[i % servers.length], owner.auth, Buffer.alloc(1_000, i), { name: `n${i}.bin` }),
      ),
    );
    const outcome = JSON.stringify(results.map((r) => [r.status, r.body.error?.code]));
    expect(results.every((r) => r.status === 200 || (r.status === 413 && r.body.error.code === 'storage_exceeded')), outcome).toBe(true);
    const stored = await storageOf(context, owner.accountId);
    // Never more than the quota, and used storage is exactly what the stored files hold: nothing charged twice or lost.
    expect(stored.used).toBeLessThanOrEqual(limit);
    expect(stored).toEqual({ used: stored.sumOfFiles, reserved: 0, sumOfFiles: stored.sumOfFiles });
    // The first overwrite to commit grows the file by 500 bytes, the later ones change nothing. Either it came before the
    // eleventh new file (then all eight overwrites succeed and ten new files fit), or after (then none fits, and eleven do).
    const newFiles = results.filter((r, i) => i % 4 !== 0 && r.status === 200).length;
    const overwrites = results.filter((r, i) => i % 4 === 0 && r.status === 200).length;
    expect([[10, 8], [11, 0]], outcome).toContainEqual([newFiles, overwrites]);
    expect(stored.used).toBe(1_000 * (1 + newFiles) + (overwrites > 0 ? 500 : 0));
    // The refusals came only because the quota was really full.
    expect(limit - stored.used).toBeLessThan(overwrites > 0 ? 1_000 : 500);
    const listed = (await fetch(`${servers[0].baseUrl}/v1/files?per_page=100`, { headers: owner.auth }).then((r) => r.json())) as { data: { name: string }[] };
    expect(listed.data).toHaveLength(1 + newFiles);
    expect(listBlobsIn(environment.env.STORAGE_DIR, `files/${owner.accountId}`)).toHaveLength(1 + newFiles);
    expect(listBlobsIn(environment.env.STORAGE_DIR, 'tmp')).toEqual([]);
    // What each upload kept until its blob was in place is gone too.
    await eventually(async () => (await context.get(DataSource).getRepository(UploadReservationEntity).countBy({ accountId: owner.accountId })) === 0, 20_000, 'finished uploads to be forgotten');
  }, 90_000);
});
