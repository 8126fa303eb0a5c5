import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { createApp } from '../../../src/app.factory.js';
import { loadConfig } from '../../../src/config/app-config.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { UploadReservationEntity } from '../../../src/modules/files/upload/upload-reservation.entity.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { startTestAppWithOwnRedis, type TestAppWithOwnRedis } from '../../support/redis-server.js';
import { useTestApp } from '../../support/app-fixture.js';
import { storageOf } from '../../support/files.js';
import { createTestEnvironment, startTestApp, type TestApp } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { listBlobs, listBlobsIn, rawUpload, upload, uploadOk } from '../../support/uploads.js';

const MiB = 1024 * 1024;

describe('uploads under faults', () => {
  let t: TestAppWithOwnRedis;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started), { start: startTestAppWithOwnRedis });

  it('100 uploads aborted by the client at random points leave storage and disk as they were', async () => {
    await uploadOk(t, owner.auth, 'a file that stays', { name: 'keeper.txt' });
    const before = await storageOf(t.app, owner.accountId);
    const blobsBefore = listBlobs(t, 'files').length;
    // Hang up anywhere from the multipart head to the last MiB, at any byte.
    const sizes = Array.from({ length: 100 }, (_, i) => ({ fileSize: 4 * MiB, abortAfter: Math.floor((((i * 7919) % 100) / 100) * 3 * MiB) }));
    const results = [];
    for (let i = 0; i < sizes.length; i += 10) {
      results.push(...(await Promise.all(sizes.slice(i, i + 10).map((options) => rawUpload(t, owner.auth, options)))));
    }
    // Every upload was cut short by its client, at the byte planned.
    expect(results.map((r) => [r.outcome, r.sent])).toEqual(sizes.map((s) => ['aborted', s.abortAfter]));
    // The server notices each hang-up on its own time. On a loaded machine it may not even have read some of these
    // requests yet when the client has hung up: such an upload starts (and reserves) after the others were given
    // back. So wait until the server holds no connection, then until nothing is held, several checks in a row. A
    // kept-alive connection with no request (this test's own uploadOk) stays open for the idle limit: closed here.
    const server = t.app.getHttpServer() as Server;
    await eventually(
      () =>
        new Promise<boolean>((resolve) => {
          server.closeIdleConnections();
          server.getConnections((_, open) => resolve(open === 0));
        }),
      30_000,
      'every connection closed',
    );
    const settled = async () =>
      (await storageOf(t.app, owner.accountId)).reserved === 0 &&
      (await t.app.get(DataSource).getRepository(UploadReservationEntity).countBy({ accountId: owner.accountId })) === 0 &&
      listBlobs(t, 'tmp').length === 0;
    let calmChecks = 0;
    await eventually(async () => ((await settled()) ? ++calmChecks >= 5 : ((calmChecks = 0), false)), 30_000, 'reservations and temporary blobs to be released');
    expect(await storageOf(t.app, owner.accountId)).toEqual(before);
    expect(listBlobs(t, 'files').length).toBe(blobsBefore);
  });

  it('keeps taking uploads promptly while Redis is down, and their background work runs once it is back', async () => {
    await t.redis.stop();
    const uploaded = [];
    try {
      // Each upload is answered while Redis is still down: the queueing of its background work does not wait for Redis.
      for (let i = 0; i < 5; i++) uploaded.push(await uploadOk(t, owner.auth, `written while Redis was down ${i}`, { name: `outage-${i}.txt` }));
      expect(uploaded.map((f) => f.scan_status)).toEqual(Array(5).fill('pending'));
    } finally {
      await t.redis.restart();
    }
    const files = t.app.get(DataSource).getRepository(FileEntity);
    for (const file of uploaded) {
      // The scan job could not be queued while Redis was away; the stalled-work sweep or the queued
      // retry brings it through once Redis is back. Either way the file must leave 'pending'.
      await eventually(async () => (await files.findOneByOrFail({ id: file.id })).scanStatus !== 'pending', 30_000, `scan of ${file.name}`);
    }
    const state = await storageOf(t.app, owner.accountId);
    expect(state.reserved).toBe(0);
    expect(state.used).toBe(state.sumOfFiles);
  });
});

/** A real file system of 1 MiB (tmpfs) for STORAGE_DIR; null where this process may not mount one (not root). */
function mountSmallDisk(): string | null {
  const dir = mkdtempSync(join(tmpdir(), 'fss-small-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
}

describe.skipIf(process.getuid?.() !== 0)('uploads to a full disk', () => {
  let disk: string | null = null;
  let t: TestApp;
  let owner: TestAccount;

  beforeAll(async () => {
    disk = mountSmallDisk();
    if (!disk) throw new Error('Could not mount a tmpfs for STORAGE_DIR');
    t = await startTestApp({ STORAGE_DIR: disk });
    owner = await createAccount(t.app);
  });
  afterAll(async () => {
    await t?.close();
    if (disk) {
      execFileSync('umount', [disk]);
      rmSync(disk, { recursive: true, force: true });
    }
  });

  it('are answered 503 service_unavailable with Retry-After, not a 400 blaming the request, and hold nothing; taken again once there is room', async () => {
    await uploadOk(t, owner.auth, 'stored before the disk filled', { name: 'before.txt' });
    const before = await storageOf(t.app, owner.accountId);
    // Every block of the disk taken by something else.
    const filler = join(disk!, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(2 * MiB));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
    }
    // Held in memory (up to 64 KiB), charged at commit (up to 1 MiB), reserved as it streams.
    for (const size of [30 * 1024, 900 * 1024, 3 * MiB]) {
      const res = await upload(t, owner.auth, Buffer.alloc(size, 1), { name: `full-${size}.bin` });
      expect(res.status, `${size} bytes`).toBe(503);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.body.error.message).not.toMatch(/ENOSPC|\//);
      expect(res.headers.get('retry-after')).toBe('5');
    }
    expect(await storageOf(t.app, owner.accountId)).toEqual(before);
    expect(listBlobs(t, 'tmp')).toEqual([]);
    rmSync(filler);
    expect((await upload(t, owner.auth, Buffer.alloc(300 * 1024, 2), { name: 'after.bin' })).status).toBe(200);
  });
});

describe('an upload the database refuses while its bytes arrive', () => {
  // PostgreSQL, whatever TEST_DB: it can refuse a statement for a lock another session holds (lock_timeout, set for the
  // service's connections), at once and every time; SQLite makes every other transaction of the process queue behind.
  it('is answered 503 with Retry-After as the database being busy, not a 400 quoting the driver, and holds nothing', async () => {
    const environment = await createTestEnvironment({}, { database: 'postgres' });
    const databaseUrl = new URL(environment.env.DATABASE_URL);
    databaseUrl.searchParams.set('options', '-c lock_timeout=200');
    const app = await createApp(loadConfig({ ...environment.env, DATABASE_URL: databaseUrl.toString() }));
    const locker = new pg.Client({ connectionString: environment.env.DATABASE_URL });
    try {
      await app.listen(0, '127.0.0.1');
      const t = { baseUrl: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}` };
      const owner = await createAccount(app);
      const before = await storageOf(app, owner.accountId);
      await locker.connect();
      await locker.query('BEGIN');
      // New reservations cannot be written (reads go on).
      await locker.query('LOCK TABLE upload_reservations IN SHARE MODE');
      // Above 1 MiB: the upload writes its reservation row while its bytes arrive.
      const res = await upload(t, owner.auth, Buffer.alloc(3 * MiB, 1), { name: 'while-locked.bin' });
      await locker.query('ROLLBACK');
      expect([res.status, res.body.error.message]).toEqual([503, 'The database is busy; retry in a moment.']);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.headers.get('retry-after')).toBeTruthy();
      expect(await storageOf(app, owner.accountId)).toEqual(before);
      expect(listBlobsIn(environment.env.STORAGE_DIR, 'tmp/')).toEqual([]);
    } finally {
      await locker.end().catch(() => undefined);
      await app.close();
      await environment.dispose();
    }
  }, 60_000);
});
