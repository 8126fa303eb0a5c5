import { createHash, randomBytes } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { ResumableUploadEntity } from '../../../src/modules/uploads/resumable-upload.entity.js';
import type { TestAccount } from '../../support/accounts.js';
import { storageOf } from '../../support/files.js';
import type { ServerProcess } from '../../support/processes.js';
import { type ServerProcesses, useServerProcesses } from '../../support/server-processes.js';
import { tusUpload, tusUploadUntil } from '../../support/tus.js';

const MiB = 1024 * 1024;
const md5 = (content: Buffer) => createHash('md5').update(content).digest('hex');

describe.each(['local', 's3'] as const)('resumable uploads across server processes (built server, real processes), on %s storage', (driver) => {
  let context: INestApplicationContext;
  let owner: TestAccount;
  let servers: ServerProcess[];
  let start: ServerProcesses['start'];
  useServerProcesses((processes) => ({ context, owner, servers, start } = processes), { s3: driver === 's3' });
  const fileOf = async (server: ServerProcess, id: string) =>
    (await fetch(`${server.baseUrl}/v1/files/${id}`, { headers: owner.auth }).then((r) => r.json() as Promise<{ data: Record<string, unknown> }>)).data;
  const offsetOf = async (url: string) =>
    Number((await fetch(url, { method: 'HEAD', headers: { ...owner.auth, 'Tus-Resumable': '1.0.0' } })).headers.get('upload-offset'));


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
