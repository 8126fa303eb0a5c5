import type { INestApplicationContext } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../support/accounts.js';
import { storageOf } from '../../support/files.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { type ServerProcess, startServerProcess } from '../../support/processes.js';
import { createTestEnvironment, type TestDatabase, type TestEnvironment } from '../../support/test-app.js';
import { listBlobsIn, upload } from '../../support/uploads.js';

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
});
