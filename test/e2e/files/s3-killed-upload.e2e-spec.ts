import type { INestApplicationContext } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import type { TestAccount } from '../../support/accounts.js';
import { storageOf } from '../../support/files.js';
import type { ServerProcess } from '../../support/processes.js';
import type { TestS3 } from '../../support/s3.js';
import { type ServerProcesses, useServerProcesses } from '../../support/server-processes.js';
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
  let context: INestApplicationContext;
  let owner: TestAccount;
  let servers: ServerProcess[];
  let start: ServerProcesses['start'];
  useServerProcesses(
    (processes) => {
      ({ context, owner, servers, start } = processes);
      s3 = processes.s3!;
    },
    { s3: true },
  );

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
