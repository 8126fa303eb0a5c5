import type { INestApplicationContext } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { storageOf } from '../../support/files.js';
import { freePort, startServerProcess, type ServerProcess } from '../../support/processes.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { startS3, type TestS3 } from '../../support/s3.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { rawUpload } from '../../support/uploads.js';

const MiB = 1024 * 1024;

/**
 * A multipart POST /v1/files streams into an S3 multipart upload at tmp/<upload id>. A server killed mid-upload cannot
 * abort it; the process that reclaims the dead upload's reservation must, or its parts stay in the bucket (and are
 * billed) for good: no object listing shows them.
 */
describe('an upload to S3 whose server was killed mid-upload (built server)', () => {
  let s3: TestS3;
  let environment: TestEnvironment;
  let context: INestApplicationContext;
  let owner: TestAccount;
  const servers: ServerProcess[] = [];
  const start = async () => {
    const server = await startServerProcess(environment.env, await freePort(), 90_000);
    servers.push(server);
    return server;
  };

  beforeAll(async () => {
    s3 = await startS3();
    environment = await createTestEnvironment({ INSTANCE_HEARTBEAT_MS: '300', ...s3.env() });
    await start();
    context = await startOperatorContext(environment.env);
    owner = await createAccount(context);
  });
  afterAll(async () => {
    for (const server of servers) await server.stop('SIGKILL').catch(() => undefined);
    await context?.close();
    await environment?.dispose();
    await s3?.close();
  });

  it('leaves no unfinished multipart upload in the bucket once another process reclaims it, and no quota held', async () => {
    const killed = servers[0];
    let hangUp: (() => void) | null = null;
    // 12 of 40 MiB sent, then quiet: the first 8 MiB part is in the bucket.
    const cut = rawUpload(killed, owner.auth, { fileSize: 40 * MiB, declaredLength: 40 * MiB + 300, holdAfter: 12 * MiB, onHold: (hang) => (hangUp = hang) });
    await eventually(async () => hangUp !== null && s3.unfinishedMultipartUploads().length > 0, 30_000, 'the upload to stream into a multipart upload');
    expect((await storageOf(context, owner.accountId)).reserved).toBeGreaterThan(0);
    await killed.stop('SIGKILL');
    hangUp!();
    expect((await cut).outcome).toBe('cut-off');

    await start();
    await eventually(async () => (await storageOf(context, owner.accountId)).reserved === 0, 30_000, 'the dead upload to be reclaimed');
    expect(s3.unfinishedMultipartUploads()).toEqual([]);
  }, 180_000);
});
