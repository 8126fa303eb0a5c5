import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerInstanceEntity } from '../../../src/infra/instances/server-instance.entity.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { UploadReservationEntity } from '../../../src/modules/files/upload/upload-reservation.entity.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { freePort, type ServerProcess, startServerProcess } from '../../support/processes.js';
import { storageOf } from '../../support/files.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { listBlobsIn, rawUpload, upload } from '../../support/uploads.js';

const MiB = 1024 * 1024;

describe('the server killed (SIGKILL) mid-upload, then restarted', () => {
  let environment: TestEnvironment;
  let context: INestApplicationContext;
  let server: ServerProcess | null = null;
  let owner: TestAccount;

  beforeAll(async () => {
    // A short heartbeat so the dead process is recognised within a couple of seconds, not 30.
    environment = await createTestEnvironment({ INSTANCE_HEARTBEAT_MS: '300' });
    server = await startServerProcess(environment.env, await freePort());
    // The test reads the database like an operator would: from its own process context, without workers.
    context = await startOperatorContext(environment.env);
    owner = await createAccount(context);
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await context?.close();
    await environment.dispose();
  });

  async function storage() {
    const ds = context.get(DataSource);
    return {
      ...(await storageOf(context, owner.accountId)),
      files: await ds.getRepository(FileEntity).findBy({ accountId: owner.accountId }),
      reservations: await ds.getRepository(UploadReservationEntity).count(),
    };
  }

  it('gives back the quota and the temporary bytes of the uploads it was receiving, and keeps every stored file', async () => {
    for (let i = 0; i < 3; i++) {
      const stored = await upload(server!, owner.auth, `kept ${i} `.repeat(1000), { name: `kept-${i}.txt` });
      expect(stored.status).toBe(200);
    }
    const before = await storage();
    expect(before.used).toBe(before.sumOfFiles);

    // Four uploads stream part of their bytes and then wait, mid-body, as a slow client would.
    let holding = 0;
    const inFlight = [3, 5, 9, 17].map((mib) =>
      rawUpload(server!, owner.auth, { fileSize: 64 * MiB, declaredLength: 64 * MiB + 300, holdAfter: mib * MiB, onHold: () => holding++ }),
    );
    await eventually(async () => holding === 4, 30_000, 'the four clients to have sent their part');
    await eventually(async () => (await storage()).reservations === 4 && listBlobsIn(environment.env.STORAGE_DIR, 'tmp').length === 4, 15_000, 'four uploads in progress');
    await eventually(async () => (await storage()).reserved > 0, 15_000, 'quota reserved by the uploads');
    const port = Number(new URL(server!.baseUrl).port);
    await server!.stop('SIGKILL');
    server = null;
    // Each upload lost its connection with the process, unanswered.
    expect((await Promise.all(inFlight)).map((r) => [r.outcome, r.sent])).toEqual([3, 5, 9, 17].map((mib) => ['cut-off', mib * MiB]));

    // What the crash left: reservations, reserved quota and temporary files nobody will finish.
    const leftBehind = await storage();
    expect(leftBehind.reservations).toBe(4);
    expect(leftBehind.reserved).toBeGreaterThan(0);
    expect(listBlobsIn(environment.env.STORAGE_DIR, 'tmp')).toHaveLength(4);
    const owners = new Set((await context.get(DataSource).getRepository(UploadReservationEntity).find()).map((r) => r.instanceId));
    expect(owners.size).toBe(1);
    const killedInstance = [...owners][0];
    expect(killedInstance).toMatch(/^srv_/);

    server = await startServerProcess(environment.env, port);
    await eventually(async () => (await storage()).reservations === 0, 20_000, 'the dead process’s reservations to be reclaimed');
    const after = await storage();
    expect(after.reserved).toBe(0);
    expect(after.used).toBe(after.sumOfFiles);
    expect(after.used).toBe(before.used);
    expect(listBlobsIn(environment.env.STORAGE_DIR, 'tmp')).toEqual([]);
    // Exactly the stored files' blobs remain, and each still downloads.
    expect(listBlobsIn(environment.env.STORAGE_DIR, 'files').sort()).toEqual(after.files.map((f) => f.blobKey).sort());
    const listing = (await fetch(`${server.baseUrl}/v1/files`, { headers: owner.auth }).then((r) => r.json())) as { data: { name: string; download_url: string }[] };
    expect(listing.data.map((f) => f.name).sort()).toEqual(['kept-0.txt', 'kept-1.txt', 'kept-2.txt']);
    const download = await fetch(listing.data[0].download_url.replace(/^https?:\/\/[^/]+/, server.baseUrl));
    expect(await download.text()).toMatch(/^kept \d /);

    // The killed process stopped beating; the new one beats under another id, and uploads work again.
    const instances = context.get(DataSource).getRepository(ServerInstanceEntity);
    const lastBeatOfKilled = (await instances.findOneBy({ id: killedInstance! }))?.heartbeatAt.getTime() ?? null;
    const firstBeat = await eventually(async () => (await instances.find()).find((i) => i.id !== killedInstance), 10_000, 'the new process to register');
    await eventually(async () => (await instances.findOneByOrFail({ id: firstBeat.id })).heartbeatAt > firstBeat.heartbeatAt, 10_000, 'the new process to beat again');
    // Meanwhile the killed one's heartbeat stayed where it was (or its row was cleaned up).
    expect([lastBeatOfKilled, null]).toContain((await instances.findOneBy({ id: killedInstance! }))?.heartbeatAt.getTime() ?? null);
    const again = await upload(server, owner.auth, 'after the crash', { name: 'after.txt' });
    expect(again.status).toBe(200);
    expect((await storage()).used).toBe(before.used + 'after the crash'.length);
  }, 90_000);
});
