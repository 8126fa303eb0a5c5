import type { Server } from 'node:http';
import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { UploadReservationEntity } from '../../../src/modules/files/upload/upload-reservation.entity.js';
import type { TestAccount } from '../../support/accounts.js';
import { startTestAppWithOwnRedis, type TestAppWithOwnRedis } from '../../support/redis-server.js';
import { useTestApp } from '../../support/app-fixture.js';
import { storageOf } from '../../support/files.js';
import { eventually } from '../../support/time.js';
import { listBlobs, rawUpload, uploadOk } from '../../support/uploads.js';

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
    // back. So wait until the server holds no connection, then until nothing is held, several checks in a row.
    const server = t.app.getHttpServer() as Server;
    await eventually(() => new Promise<boolean>((resolve) => server.getConnections((_, open) => resolve(open === 0))), 30_000, 'every connection closed');
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
