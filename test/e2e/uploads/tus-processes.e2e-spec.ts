import { createHash, randomBytes } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { ResumableUploadEntity } from '../../../src/modules/uploads/resumable-upload.entity.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { storageOf } from '../../support/files.js';
import { freePort, type ServerProcess, startServerProcess } from '../../support/processes.js';
import { startS3, type TestS3 } from '../../support/s3.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { tusUpload, tusUploadUntil } from '../../support/tus.js';
import { startOperatorContext } from '../../support/operator-context.js';

const MiB = 1024 * 1024;
const md5 = (content: Buffer) => createHash('md5').update(content).digest('hex');

describe.each(['local', 's3'] as const)('resumable uploads across server processes (built server, real processes), on %s storage', (driver) => {
  let s3: TestS3 | null = null;
  let environment: TestEnvironment;
  let context: INestApplicationContext;
  let owner: TestAccount;
  const servers: ServerProcess[] = [];

  const start = async (port?: number) => {
    // A generous start-up guard: a loaded machine has taken more than 30 s.
    const server = await startServerProcess(environment.env, port ?? (await freePort()), 90_000);
    servers.push(server);
    return server;
  };
  const fileOf = async (server: ServerProcess, id: string) =>
    (await fetch(`${server.baseUrl}/v1/files/${id}`, { headers: owner.auth }).then((r) => r.json() as Promise<{ data: Record<string, unknown> }>)).data;
  const offsetOf = async (url: string) =>
    Number((await fetch(url, { method: 'HEAD', headers: { ...owner.auth, 'Tus-Resumable': '1.0.0' } })).headers.get('upload-offset'));

  beforeAll(async () => {
    if (driver === 's3') s3 = await startS3();
    environment = await createTestEnvironment({ INSTANCE_HEARTBEAT_MS: '300', ...(s3 ? s3.env() : {}) });
    // Migrations run as the first server starts; the test then reads the database from its own context.
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

  it('resumes after the server is killed (SIGKILL) mid-upload and restarted, to the right MD5', async () => {
    const server = servers[0];
    const content = randomBytes(24 * MiB);
    const url = await tusUploadUntil(server.baseUrl, owner.auth, content, 9 * MiB, { chunkSize: 4 * MiB, metadata: { filename: 'killed.bin' } });
    const port = Number(new URL(server.baseUrl).port);
    await server.stop('SIGKILL');
    const restarted = await start(port);
    const resumedFrom = await offsetOf(url);
    expect(resumedFrom).toBeGreaterThanOrEqual(9 * MiB);
    // The lock a killed process held expires by itself; tus-js-client retries the 423 meanwhile.
    const { fileId } = await tusUpload(restarted.baseUrl, owner.auth, content, { uploadUrl: url, chunkSize: 4 * MiB, metadata: { filename: 'killed.bin' } });
    expect(await fileOf(restarted, fileId)).toMatchObject({ name: 'killed.bin', size: content.length, md5_hash: md5(content) });
    expect(await storageOf(context, owner.accountId)).toMatchObject({ reserved: 0 });
  });

  it('resumes on a second server process sharing the database, Redis and storage, to the right MD5', async () => {
    const first = servers[servers.length - 1];
    const second = await start();
    const content = randomBytes(20 * MiB);
    const startedOnFirst = await tusUploadUntil(first.baseUrl, owner.auth, content, 5 * MiB, { chunkSize: 2 * MiB, metadata: { filename: 'moved.bin' } });
    const url = `${second.baseUrl}${new URL(startedOnFirst).pathname}`;
    const offset = await offsetOf(url);
    expect(offset).toBeGreaterThanOrEqual(5 * MiB);
    // The MD5 of what the first process received is saved with the upload: the second goes on from it, reading nothing again.
    const upload = await context.get(DataSource).getRepository(ResumableUploadEntity).findOneByOrFail({ id: new URL(url).pathname.split('/').pop() });
    expect(upload.md5Offset).toBe(offset);
    const { fileId } = await tusUpload(second.baseUrl, owner.auth, content, { uploadUrl: url, chunkSize: 2 * MiB, metadata: { filename: 'moved.bin' } });
    expect(await fileOf(first, fileId)).toMatchObject({ name: 'moved.bin', size: content.length, md5_hash: md5(content) });
    expect(await storageOf(context, owner.accountId)).toMatchObject({ reserved: 0 });
  });
});
