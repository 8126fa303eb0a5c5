import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { REDIS } from '../../../src/infra/redis/redis.module.js';
import { BlobStorage } from '../../../src/infra/storage/blob-storage.js';
import { OutboxEventEntity } from '../../../src/infra/outbox/outbox-event.entity.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { UploadHasher } from '../../../src/modules/files/upload/hashing/upload-hasher.js';
import { UploadSweeper } from '../../../src/modules/files/upload/upload-sweeper.js';
import { ResumableUploadPartEntity } from '../../../src/modules/uploads/resumable-upload-part.entity.js';
import { ResumableUploadEntity } from '../../../src/modules/uploads/resumable-upload.entity.js';
import { CompleteResumableUploadHandler } from '../../../src/modules/uploads/commands/complete-resumable-upload.command.js';
import { ResumableUploadExpiry } from '../../../src/modules/uploads/resumable-upload-expiry.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { storageOf } from '../../support/files.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { eventually, sleep } from '../../support/time.js';
import { cuttingProxy, tusUpload, tusUploadUntil } from '../../support/tus.js';
import { uploadOk } from '../../support/uploads.js';
import { startS3, type TestS3 } from '../../support/s3.js';

const MiB = 1024 * 1024;
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const md5 = (content: Buffer) => createHash('md5').update(content).digest('hex');
const b64 = (value: string) => Buffer.from(value).toString('base64');
const metadataHeader = (metadata: Record<string, string>) =>
  Object.entries(metadata)
    .map(([k, v]) => `${k} ${b64(v)}`)
    .join(',');

describe.each(['local', 's3'] as const)('resumable uploads (tus 1.0) with tus-js-client, on %s storage', (driver) => {
  let s3: TestS3 | null = null;
  let t: TestApp;
  let owner: TestAccount;
  /** STORAGE_DRIVER and its settings for an app of this run. */
  const storageEnv = (): Record<string, string> => (s3 ? s3.env() : {});
  /** Every stored object holding bytes of the upload at `url` (its temporary blob; on S3 also its staged incomplete part). */
  const bytesOf = async (app: TestApp, url: string) => {
    const id = new URL(url).pathname.split('/').pop()!;
    const keys: string[] = [];
    for (const prefix of ['tmp/', 'tus-parts/']) for await (const blob of app.app.get(BlobStorage).list(prefix)) if (blob.key.includes(id)) keys.push(blob.key);
    return keys;
  };
  const tempBlobs = async (app: TestApp) => {
    const keys: string[] = [];
    for (const prefix of ['tmp/', 'tus-parts/']) for await (const blob of app.app.get(BlobStorage).list(prefix)) keys.push(blob.key);
    return keys;
  };

  /** A creation request as a tus client sends it. */
  const create = (auth: Record<string, string>, length: number | null, metadata: Record<string, string> = { filename: 'a.bin' }) =>
    fetch(`${t.baseUrl}/v1/uploads`, {
      method: 'POST',
      headers: {
        ...auth,
        'Tus-Resumable': '1.0.0',
        ...(length === null ? { 'Upload-Defer-Length': '1' } : { 'Upload-Length': String(length) }),
        'Upload-Metadata': metadataHeader(metadata),
      },
    });
  const patch = (auth: Record<string, string>, url: string, offset: number, body: Buffer, extra: Record<string, string> = {}) =>
    fetch(url, {
      method: 'PATCH',
      headers: { ...auth, 'Tus-Resumable': '1.0.0', 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream', ...extra },
      body,
    });
  /**
   * A PATCH whose body streams in 256 KiB pieces (`content` first, then zeros), without Content-Length unless `declared`
   * says so; it stops sending and resolves with the answer as soon as one comes, as tus clients do. (fetch keeps sending
   * a body the server has refused, and may see the connection reset before it reads the answer.)
   */
  const streamingPatch = (auth: Record<string, string>, url: string, offset: number, total: number, content = Buffer.alloc(0), declared?: 'declared', extra: Record<string, string> = {}) =>
    new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const target = new URL(url);
      const req = httpRequest({
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'PATCH',
        headers: { ...auth, 'Tus-Resumable': '1.0.0', 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream', ...(declared ? { 'Content-Length': String(total) } : { 'Transfer-Encoding': 'chunked' }), ...extra },
      });
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString() || 'null') }));
      });
      req.on('error', (error) => (answered ? undefined : reject(error)));
      const piece = 256 * 1024;
      let sent = 0;
      const next = () => {
        while (!answered && sent < total) {
          const bytes = sent < content.length ? content.subarray(sent, sent + piece) : Buffer.alloc(Math.min(piece, total - sent));
          sent += bytes.length;
          if (!req.write(bytes)) return void req.once('drain', next);
        }
        if (!answered) req.end();
      };
      next();
    });
  const head = (auth: Record<string, string>, url: string) => fetch(url, { method: 'HEAD', headers: { ...auth, 'Tus-Resumable': '1.0.0' } });
  const getFile = async (id: string, auth = owner.auth) => (await fetch(`${t.baseUrl}/v1/files/${id}`, { headers: auth }).then((r) => r.json() as Promise<{ data: Record<string, unknown> }>)).data;
  /** The upload URL a creation answered (Location is relative). */
  const locationOf = (created: Response) => new URL(created.headers.get('location')!, t.baseUrl).toString();
  const events = async (accountId: string, name: string) =>
    (await t.app.get(DataSource).getRepository(OutboxEventEntity).findBy({ accountId, event: name })).map((e) => JSON.parse(e.payload));

  beforeAll(async () => {
    if (driver === 's3') s3 = await startS3();
    t = await startTestApp(storageEnv());
    owner = await createAccount(t.app);
  });
  afterAll(async () => {
    await t?.close();
    await s3?.close();
  });

  it('uploads in chunks into a file, as the multipart upload would: MD5, detected type, quota, file.uploaded', async () => {
    const folder = (await fetch(`${t.baseUrl}/v1/folders`, { method: 'POST', headers: { ...owner.auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Pictures' }) }).then((r) => r.json() as Promise<{ data: Record<string, unknown> }>)).data;
    const content = Buffer.concat([PNG, randomBytes(3 * MiB + 123)]);
    const { fileId } = await tusUpload(t.baseUrl, owner.auth, content, { chunkSize: MiB, metadata: { filename: 'photo.bin', name: 'holiday.png', folder_id: String(folder.id) } });
    const file = await getFile(fileId);
    expect(file).toMatchObject({ id: fileId, name: 'holiday.png', folder_id: folder.id, size: content.length, md5_hash: md5(content), type: 'image/png', category: 'image' });
    expect(await storageOf(t.app, owner.accountId)).toMatchObject({ reserved: 0 });
    expect((await events(owner.accountId, 'file.uploaded')).map((e) => e.file.id)).toContain(fileId);
    expect(await tempBlobs(t)).toEqual([]);
  });

  it('takes a taken name with a numbered suffix, or replaces the file with overwrite=true', async () => {
    const first = await uploadOk(t, owner.auth, 'one', { filename: 'report.txt' });
    const suffixed = await tusUpload(t.baseUrl, owner.auth, Buffer.from('two'), { metadata: { filename: 'report.txt' } });
    expect((await getFile(suffixed.fileId)).name).toBe('report (1).txt');
    const replaced = await tusUpload(t.baseUrl, owner.auth, Buffer.from('three!'), { metadata: { filename: 'report.txt', overwrite: 'true' } });
    expect(replaced.fileId).toBe(first.id);
    expect(await getFile(first.id)).toMatchObject({ size: 6, md5_hash: md5(Buffer.from('three!')) });
    const usage = await storageOf(t.app, owner.accountId);
    expect(usage.used).toBe(usage.sumOfFiles);
  });

  it('completes an upload whose folder was deleted meanwhile into the root, under a free name, replacing nothing there', async () => {
    const json = { ...owner.auth, 'Content-Type': 'application/json' };
    const folder = (await fetch(`${t.baseUrl}/v1/folders`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'Drafts' }) }).then((r) => r.json() as Promise<{ data: { id: string } }>)).data;
    const inRoot = await uploadOk(t, owner.auth, 'kept as it is', { filename: 'minutes.txt' });
    const content = Buffer.from('the minutes, resumed');
    const created = await create(owner.auth, content.length, { filename: 'minutes.txt', folder_id: folder.id, overwrite: 'true' });
    expect(created.status).toBe(201);
    const url = locationOf(created);
    expect((await patch(owner.auth, url, 0, content.subarray(0, 8))).status).toBe(204);
    expect((await fetch(`${t.baseUrl}/v1/folders/${folder.id}`, { method: 'DELETE', headers: owner.auth })).status).toBe(200);

    const last = await patch(owner.auth, url, 8, content.subarray(8));
    expect(last.status).toBe(204);
    const fileId = last.headers.get('x-file-id')!;
    expect(fileId).not.toBe(inRoot.id);
    expect(await getFile(fileId)).toMatchObject({ name: 'minutes (1).txt', folder_id: null, size: content.length, md5_hash: md5(content) });
    expect(await getFile(inRoot.id)).toMatchObject({ name: 'minutes.txt', size: 'kept as it is'.length });
    expect((await events(owner.accountId, 'file.uploaded')).find((event) => event.file.id === fileId)).toMatchObject({ file: { folder_id: null } });
    const usage = await storageOf(t.app, owner.accountId);
    expect(usage.used).toBe(usage.sumOfFiles);
    expect(usage.reserved).toBe(0);
  });

  it('uploads a 64 MiB file through a connection cut at random points, resuming to the right MD5', async () => {
    const content = randomBytes(64 * MiB);
    const cutAt = Array.from({ length: 4 }, () => Math.floor(Math.random() * 60 * MiB) + 2 * MiB);
    const proxy = await cuttingProxy(Number(new URL(t.baseUrl).port), cutAt);
    try {
      const { fileId, uploadUrl } = await tusUpload(`http://127.0.0.1:${proxy.port}`, owner.auth, content, {
        metadata: { filename: 'big.bin' },
        chunkSize: 16 * MiB,
      });
      expect(proxy.cuts()).toBeGreaterThan(0);
      expect(await getFile(fileId)).toMatchObject({ size: content.length, md5_hash: md5(content) });
      if (driver === 's3') {
        // The bytes went to S3 as a multipart upload of (mostly) 8 MiB parts.
        const uploadId = new URL(uploadUrl).pathname.split('/').pop();
        expect(await t.app.get(DataSource).getRepository(ResumableUploadPartEntity).countBy({ uploadId })).toBeGreaterThanOrEqual(8);
      }
    } finally {
      await proxy.close();
    }
  });

  it('hashes PATCHes on the upload hashing thread where there are cores for it, resuming through cuts to the right MD5', async () => {
    const hasher = t.app.get(UploadHasher);
    const resumedOnThread = vi.spyOn(hasher, 'resume');
    hasher.onThread = true;
    const content = randomBytes(24 * MiB);
    const cutAt = Array.from({ length: 3 }, () => Math.floor(Math.random() * 20 * MiB) + 2 * MiB);
    const proxy = await cuttingProxy(Number(new URL(t.baseUrl).port), cutAt);
    try {
      const { fileId } = await tusUpload(`http://127.0.0.1:${proxy.port}`, owner.auth, content, { metadata: { filename: 'threaded.bin' }, chunkSize: 4 * MiB });
      expect(proxy.cuts()).toBeGreaterThan(0);
      expect(resumedOnThread.mock.calls.length).toBeGreaterThanOrEqual(6);
      expect(await getFile(fileId)).toMatchObject({ size: content.length, md5_hash: md5(content) });
    } finally {
      hasher.onThread = false;
      resumedOnThread.mockRestore();
      await proxy.close();
    }
  });

  it('takes PATCH, HEAD and DELETE sent as POST with X-HTTP-Method-Override, as tus core requires (tus-js-client overridePatchMethod)', async () => {
    const content = randomBytes(2 * MiB + 7);
    const { fileId } = await tusUpload(t.baseUrl, owner.auth, content, { chunkSize: MiB, overridePatchMethod: true, metadata: { filename: 'behind-a-proxy.bin' } });
    expect(await getFile(fileId)).toMatchObject({ size: content.length, md5_hash: md5(content) });

    const url = locationOf(await create(owner.auth, 10));
    const asPost = (method: string | null, extra: Record<string, string> = {}, body?: Buffer) =>
      fetch(url, { method: 'POST', headers: { ...owner.auth, 'Tus-Resumable': '1.0.0', ...(method ? { 'X-HTTP-Method-Override': method } : {}), ...extra }, body });
    const patched = await asPost('PATCH', { 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' }, Buffer.from('abcd'));
    expect(patched.status).toBe(204);
    expect(patched.headers.get('upload-offset')).toBe('4');
    expect((await asPost('HEAD')).headers.get('upload-offset')).toBe('4');
    // A POST naming nothing it can stand for is no route, and changes nothing.
    for (const method of [null, 'GET', 'POST']) expect(await (await asPost(method)).json()).toMatchObject({ error: { code: 'not_found' } });
    expect((await asPost('DELETE')).status).toBe(204);
    expect((await head(owner.auth, url)).status).toBe(404);
    expect(await storageOf(t.app, owner.accountId)).toMatchObject({ reserved: 0 });
  });

  it('uploads an empty file', async () => {
    const { fileId } = await tusUpload(t.baseUrl, owner.auth, Buffer.alloc(0), { metadata: { filename: 'empty.txt' } });
    expect(await getFile(fileId)).toMatchObject({ name: 'empty.txt', size: 0, md5_hash: md5(Buffer.alloc(0)) });
  });

  it('completes once: the last PATCH sent again answers the same file and creates none', async () => {
    const content = Buffer.from('just once');
    const { fileId, uploadUrl } = await tusUpload(t.baseUrl, owner.auth, content, { metadata: { filename: 'once.txt' } });
    const again = await patch(owner.auth, uploadUrl, content.length, Buffer.alloc(0));
    expect(again.status).toBe(204);
    expect(again.headers.get('x-file-id')).toBe(fileId);
    const offset = await head(owner.auth, uploadUrl);
    expect(offset.headers.get('upload-offset')).toBe(String(content.length));
    expect(offset.headers.get('x-file-id')).toBe(fileId);
    expect(await t.app.get(DataSource).getRepository(FileEntity).countBy({ accountId: owner.accountId, name: 'once.txt' })).toBe(1);
  });

  it('completes on HEAD an upload whose last PATCH stored every byte but failed to make the file', async () => {
    const content = randomBytes(300_000);
    const url = locationOf(await create(owner.auth, content.length, { filename: 'late.bin' }));
    const completion = t.app.get(CompleteResumableUploadHandler);
    const failOnce = vi.spyOn(completion, 'execute').mockRejectedValueOnce(new Error('database went away'));
    try {
      expect((await patch(owner.auth, url, 0, content)).status).toBe(500);
    } finally {
      failOnce.mockRestore();
    }
    const offset = await head(owner.auth, url);
    expect(offset.status).toBe(200);
    expect(offset.headers.get('upload-offset')).toBe(String(content.length));
    const fileId = offset.headers.get('x-file-id');
    expect(fileId).toMatch(/^file_/);
    expect(await getFile(fileId!)).toMatchObject({ name: 'late.bin', size: content.length, md5_hash: md5(content) });
    expect((await head(owner.auth, url)).headers.get('x-file-id')).toBe(fileId);
  });

  it('finds the upload of a URL with a query string (a proxy\'s or a cache buster\'s), and only that one', async () => {
    const url = locationOf(await create(owner.auth, 4));
    const other = locationOf(await create(owner.auth, 4));
    const otherId = new URL(other).pathname.split('/').pop();
    const offset = await head(owner.auth, `${url}?t=1`);
    expect(offset.status).toBe(200);
    expect(offset.headers.get('upload-length')).toBe('4');
    expect((await patch(owner.auth, `${url}?t=2`, 0, Buffer.from('ab'))).status).toBe(204);
    // A path in the query names nothing: the upload is the one of the path.
    const stored = await patch(owner.auth, `${url}?next=/v1/uploads/${otherId}`, 2, Buffer.from('cd'));
    expect(stored.status).toBe(204);
    expect(await getFile(stored.headers.get('x-file-id')!)).toMatchObject({ size: 4, md5_hash: md5(Buffer.from('abcd')) });
    expect((await head(owner.auth, other)).headers.get('upload-offset')).toBe('0');
    expect((await fetch(`${other}?t=3`, { method: 'DELETE', headers: { ...owner.auth, 'Tus-Resumable': '1.0.0' } })).status).toBe(204);
    expect((await head(owner.auth, other)).status).toBe(404);
  });

  it('names an unfinished upload\'s expiry on HEAD, and on a PATCH the one that PATCH started, as stored', async () => {
    const url = locationOf(await create(owner.auth, 4));
    const uploads = t.app.get(DataSource).getRepository(ResumableUploadEntity);
    const id = new URL(url).pathname.split('/').pop()!;
    // As if it had idled all but an hour of its expiry.
    const soon = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
    await uploads.update({ id }, { expiresAt: soon });
    expect((await head(owner.auth, url)).headers.get('upload-expires')).toBe(soon.toUTCString());
    // The PATCH starts the idle period again: its answer names the new expiry, not the one before it.
    const patched = await patch(owner.auth, url, 0, Buffer.from('ab'));
    expect(patched.status).toBe(204);
    const stored = (await uploads.findOneByOrFail({ id })).expiresAt;
    expect(stored.getTime()).toBeGreaterThan(soon.getTime());
    expect(patched.headers.get('upload-expires')).toBe(stored.toUTCString());
    expect((await head(owner.auth, url)).headers.get('upload-expires')).toBe(stored.toUTCString());
    // Complete, it is a file: nothing of it expires any more.
    const done = await patch(owner.auth, url, 2, Buffer.from('cd'));
    expect(done.headers.get('x-file-id')).toMatch(/^file_/);
    expect(done.headers.get('upload-expires')).toBeNull();
    expect((await head(owner.auth, url)).headers.get('upload-expires')).toBeNull();
  });

  it('needs a key with the write scope, and hides one account\'s uploads from another', async () => {
    const noKey = await create({}, 10);
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ success: false, error: { code: 'authentication_failed' } });
    const reader = await createKey(t.app, owner, ['read']);
    expect((await create(reader.auth, 10)).status).toBe(403);

    const created = await create(owner.auth, 10);
    expect(created.status).toBe(201);
    expect(created.headers.get('upload-expires')).toBeTruthy();
    const url = locationOf(created);
    const stranger = await createAccount(t.app);
    for (const res of [await head(stranger.auth, url), await patch(stranger.auth, url, 0, Buffer.alloc(10))]) {
      expect(res.status).toBe(404);
    }
    const refused = await fetch(url, { method: 'DELETE', headers: { ...stranger.auth, 'Tus-Resumable': '1.0.0' } });
    expect(refused.status).toBe(404);
    expect(await refused.json()).toMatchObject({ success: false, error: { code: 'not_found' } });
    expect((await head(owner.auth, url)).headers.get('upload-offset')).toBe('0');

    // The protocol's own refusals come in the envelope too.
    // Without Tus-Resumable too the answer names the versions spoken (tus 1.0: a 412 carries Tus-Version), and says what to send.
    const noVersion = await fetch(url, { method: 'HEAD', headers: owner.auth });
    expect(noVersion.status).toBe(412);
    expect(noVersion.headers.get('tus-version')).toBe('1.0.0');
    for (const headers of [owner.auth, { ...owner.auth, 'Tus-Resumable': '' }]) {
      const unversioned = await fetch(url, { method: 'PATCH', headers: { ...headers, 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' }, body: Buffer.from('ab') });
      expect(unversioned.status).toBe(412);
      expect(unversioned.headers.get('tus-version')).toBe('1.0.0');
      expect(await unversioned.json()).toMatchObject({ success: false, error: { code: 'invalid_request', message: expect.stringContaining('Tus-Resumable: 1.0.0') } });
    }
    // A version the server does not speak: 412 naming the versions it does (tus 1.0, "Tus-Resumable"), not a 400.
    for (const method of ['HEAD', 'PATCH']) {
      const oldVersion = await fetch(url, { method, headers: { ...owner.auth, 'Tus-Resumable': '0.2.2', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' } });
      expect(oldVersion.status).toBe(412);
      expect(oldVersion.headers.get('tus-version')).toBe('1.0.0');
      if (method === 'PATCH') expect(await oldVersion.json()).toMatchObject({ success: false, error: { code: 'invalid_request', message: expect.stringContaining('0.2.2 is not supported') } });
    }
    expect((await head(owner.auth, url)).headers.get('upload-offset')).toBe('0');
    const wrongOffset = await patch(owner.auth, url, 5, Buffer.alloc(5));
    expect(wrongOffset.status).toBe(409);
    expect(wrongOffset.headers.get('content-type')).toMatch(/application\/json/);
    expect(await wrongOffset.json()).toMatchObject({ success: false, error: { code: 'conflict' } });
  });

  it('answers malformed protocol requests with 400 invalid_request saying what to send, and an unoffered extension too', async () => {
    const url = locationOf(await create(owner.auth, 10));
    const tus = { ...owner.auth, 'Tus-Resumable': '1.0.0' };
    const refusals = [
      [await fetch(url, { method: 'PATCH', headers: { ...tus, 'Content-Type': 'application/offset+octet-stream' }, body: Buffer.from('ab') }), 'Upload-Offset'],
      [await fetch(url, { method: 'PATCH', headers: { ...tus, 'Upload-Offset': '0' }, body: Buffer.from('ab') }), 'application/offset+octet-stream'],
      [await fetch(`${t.baseUrl}/v1/uploads`, { method: 'POST', headers: { ...tus, 'Upload-Length': '3', 'Upload-Defer-Length': '1', 'Upload-Metadata': metadataHeader({ filename: 'a' }) } }), 'exactly one of'],
      // The concatenation extension is not offered (Tus-Extension): a client asking for it gets a 4xx, not a 5xx.
      [await fetch(`${t.baseUrl}/v1/uploads`, { method: 'POST', headers: { ...tus, 'Upload-Length': '3', 'Upload-Concat': 'partial', 'Upload-Metadata': metadataHeader({ filename: 'a' }) } }), 'Upload-Concat'],
    ] as const;
    for (const [res, says] of refusals) {
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(await res.json()).toMatchObject({ success: false, error: { code: 'invalid_request', message: expect.stringContaining(says) } });
    }
    // Values @tus/server refuses by their form are named in details.fields, as on every other route.
    const malformed = await fetch(url, { method: 'PATCH', headers: { ...tus, 'Upload-Offset': '-1', 'Content-Type': 'text/plain' }, body: Buffer.from('ab') });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({
      error: {
        code: 'invalid_request',
        details: { fields: expect.arrayContaining([{ field: 'Upload-Offset', message: expect.stringContaining('whole number') }, { field: 'Content-Type', message: expect.stringContaining('application/offset+octet-stream') }]) },
      },
    });
    expect((await head(owner.auth, url)).headers.get('upload-offset')).toBe('0');
  });

  it('takes application/offset+octet-stream in any letter case and with parameters, on a PATCH and on a creation with its first bytes', async () => {
    const content = Buffer.from('abcdefghij');
    const tus = { ...owner.auth, 'Tus-Resumable': '1.0.0' };
    const created = await fetch(`${t.baseUrl}/v1/uploads`, {
      method: 'POST',
      headers: { ...tus, 'Upload-Length': '10', 'Upload-Metadata': metadataHeader({ filename: 'media-type.bin' }), 'Content-Type': 'Application/Offset+Octet-Stream' },
      body: content.subarray(0, 3),
    });
    expect(created.status).toBe(201);
    // The first bytes were stored, not left unread.
    expect(created.headers.get('upload-offset')).toBe('3');
    const url = locationOf(created);
    const first = await patch(owner.auth, url, 3, content.subarray(3, 6), { 'Content-Type': 'application/offset+octet-stream; charset=binary' });
    expect(first.status).toBe(204);
    expect(first.headers.get('upload-offset')).toBe('6');
    const last = await patch(owner.auth, url, 6, content.subarray(6), { 'Content-Type': 'APPLICATION/OFFSET+OCTET-STREAM ; foo="bar"' });
    expect(last.status).toBe(204);
    const file = await getFile(last.headers.get('x-file-id')!);
    expect(file).toMatchObject({ name: 'media-type.bin', size: 10, md5_hash: md5(content) });

    // Another media type is still refused, and stores nothing.
    const other = locationOf(await create(owner.auth, 10));
    for (const type of ['application/octet-stream', 'application/offset+octet-streamx', 'text/plain; x=application/offset+octet-stream']) {
      const refused = await patch(owner.auth, other, 0, content, { 'Content-Type': type });
      expect(refused.status, type).toBe(400);
      expect(await refused.json()).toMatchObject({ error: { code: 'invalid_request', details: { fields: [{ field: 'Content-Type', message: expect.stringContaining('application/offset+octet-stream') }] } } });
    }
    expect((await head(owner.auth, other)).headers.get('upload-offset')).toBe('0');
  });

  it('refuses bad metadata, a missing folder, a file over the plan\'s maximum and one over the quota with the multipart upload\'s errors', async () => {
    const noName = await create(owner.auth, 10, { name: 'x.txt' });
    expect(noName.status).toBe(400);
    expect(noName.headers.get('content-type')).toMatch(/application\/json/);
    expect(await noName.json()).toMatchObject({ error: { code: 'invalid_request', details: { fields: [{ field: 'filename' }] } } });
    expect(await (await create(owner.auth, 10, { filename: 'a', folder_id: 'fld_missing' })).json()).toMatchObject({ error: { code: 'not_found' } });
    // A folder_id that cannot be an id (a NUL byte, which PostgreSQL cannot even compare; a path; 300 characters) is 400, as in the form.
    for (const folderId of ['fld_\0x', '../fld_1', 'f'.repeat(300)]) {
      const malformed = await create(owner.auth, 10, { filename: 'a', folder_id: folderId });
      expect(malformed.status, folderId).toBe(400);
      expect(await malformed.json()).toMatchObject({ error: { code: 'invalid_request', details: { fields: [{ field: 'folder_id', message: 'must be a folder id' }] } } });
    }

    const free = await createAccount(t.app, { plan: 'free', storageLimit: 150 * MiB });
    const tooLarge = await create(free.auth, 100 * MiB + 1);
    expect(tooLarge.status).toBe(413);
    expect(await tooLarge.json()).toMatchObject({ error: { code: 'file_too_large', details: { file_size: 100 * MiB + 1, max_size: 100 * MiB, plan: 'free' } } });
    expect((await create(free.auth, 100 * MiB)).status).toBe(201);
    const overQuota = await create(free.auth, 60 * MiB);
    expect(overQuota.status).toBe(413);
    expect(await overQuota.json()).toMatchObject({ error: { code: 'storage_exceeded', details: { current_usage: 100 * MiB, storage_limit: 150 * MiB, required_space: 60 * MiB } } });
    expect(await events(free.accountId, 'user.quota_exceeded')).toHaveLength(1);
  });

  it.each(['1', '0', 'yes', 'TRUE'])('refuses overwrite=%j as the multipart form does: true or false only', async (value) => {
    const res = await create(owner.auth, 10, { filename: 'o.txt', overwrite: value });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { details: unknown } }).error.details).toEqual({ fields: [{ field: 'overwrite', message: 'must be true or false' }] });
  });

  it('takes a name as the multipart upload stores it (NFC), refusing at creation one that is too long composed, not at the last byte', async () => {
    // U+0958 composes to two characters: 200 of them are 400 once composed, over the 255 a name may have.
    const before = await storageOf(t.app, owner.accountId);
    for (const field of ['filename', 'name'] as const) {
      const long = await create(owner.auth, 3, { filename: 'a.bin', [field]: '\u0958'.repeat(200) });
      expect(long.status).toBe(400);
      expect(await long.json()).toMatchObject({ error: { code: 'invalid_request', details: { fields: [{ field, message: expect.stringContaining('255') }] } } });
    }
    expect((await storageOf(t.app, owner.accountId)).reserved).toBe(before.reserved);
    // A decomposed name is stored composed, and echoed as sent.
    const created = await create(owner.auth, 3, { filename: 'cafe\u0301.txt' });
    expect(created.status).toBe(201);
    const done = await patch(owner.auth, locationOf(created), 0, Buffer.from('abc'));
    expect(done.status).toBe(204);
    expect((await getFile(done.headers.get('x-file-id')!)).name).toBe('caf\u00e9.txt');
  });

  it('lets exactly one of two uploads racing for the last of the quota through, resumable or multipart', async () => {
    const tight = await createAccount(t.app, { storageLimit: 10 * MiB });
    const answers = await Promise.all([create(tight.auth, 6 * MiB), create(tight.auth, 6 * MiB)]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 413]);
    const multipart = await fetch(`${t.baseUrl}/v1/files/upload`, { method: 'POST', headers: tight.auth, body: (() => {
      const form = new FormData();
      form.append('file', new Blob([randomBytes(5 * MiB)]), 'm.bin');
      return form;
    })() });
    expect(multipart.status).toBe(413);
    expect(await storageOf(t.app, tight.accountId)).toMatchObject({ used: 0, reserved: 6 * MiB });
  });

  it('is left alone by the multipart upload sweeper, however long it idles, and still completes', async () => {
    const account = await createAccount(t.app);
    const content = randomBytes(3 * MiB);
    const url = await tusUploadUntil(t.baseUrl, account.auth, content, MiB, { chunkSize: MiB });
    // Everything counts as stale to this sweep: a multipart reservation this old would be released.
    await t.app.get(UploadSweeper).sweep(0);
    expect((await storageOf(t.app, account.accountId)).reserved).toBe(3 * MiB);
    const { fileId } = await tusUpload(t.baseUrl, account.auth, content, { uploadUrl: url, chunkSize: MiB });
    expect(await getFile(fileId, account.auth)).toMatchObject({ md5_hash: md5(content) });
  });

  it('terminates an upload: bytes deleted, quota given back, the upload gone', async () => {
    const account = await createAccount(t.app);
    const url = await tusUploadUntil(t.baseUrl, account.auth, randomBytes(4 * MiB), 2 * MiB, { chunkSize: MiB });
    expect(await bytesOf(t, url)).not.toEqual([]);
    expect((await storageOf(t.app, account.accountId)).reserved).toBe(4 * MiB);
    const terminated = await fetch(url, { method: 'DELETE', headers: { ...account.auth, 'Tus-Resumable': '1.0.0' } });
    expect(terminated.status).toBe(204);
    expect(await bytesOf(t, url)).toEqual([]);
    expect(await storageOf(t.app, account.accountId)).toMatchObject({ used: 0, reserved: 0 });
    expect((await head(account.auth, url)).status).toBe(404);
  });

  it('resumes a deferred upload whose length a cut or refused chunk declared: the same Upload-Length sent again changes nothing', async () => {
    const content = randomBytes(2 * MiB);
    const url = locationOf(await create(owner.auth, null));
    const uploads = t.app.get(DataSource).getRepository(ResumableUploadEntity);
    const id = new URL(url).pathname.split('/').pop()!;
    // The last chunk declares the length; its connection drops once the server has recorded it, half of it sent.
    const target = new URL(url);
    const cut = connect(Number(target.port), target.hostname);
    cut.on('error', () => undefined);
    cut.write(
      `PATCH ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: ${owner.auth.Authorization}\r\nTus-Resumable: 1.0.0\r\n` +
        `Upload-Offset: 0\r\nUpload-Length: ${content.length}\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: ${content.length}\r\n\r\n`,
    );
    cut.write(content.subarray(0, MiB));
    await eventually(async () => (await uploads.findOneBy({ id }))?.length === content.length, 10_000, 'the length declared');
    cut.destroy();
    // tus-js-client resumes it as after any dropped connection: HEAD, then the rest, declaring the length again.
    const resumed = await tusUpload(t.baseUrl, owner.auth, content, { uploadUrl: url, uploadLengthDeferred: true });
    expect(await getFile(resumed.fileId)).toMatchObject({ size: content.length, md5_hash: md5(content) });

    // A chunk that declared the length and was refused for its checksum is sent again as it was.
    const checked = locationOf(await create(owner.auth, null));
    const digest = `md5 ${createHash('md5').update(content).digest('base64')}`;
    const corrupted = Buffer.from(content);
    corrupted[7] ^= 0xff;
    const mismatch = await patch(owner.auth, checked, 0, corrupted, { 'Upload-Length': String(content.length), 'Upload-Checksum': digest });
    expect(mismatch.status).toBe(460);
    const again = await patch(owner.auth, checked, 0, content, { 'Upload-Length': String(content.length), 'Upload-Checksum': digest });
    expect(again.status).toBe(204);
    expect(await getFile(again.headers.get('x-file-id')!)).toMatchObject({ size: content.length, md5_hash: md5(content) });

    // Another length than the one declared is still refused, and changes nothing.
    const declared = locationOf(await create(owner.auth, null));
    expect((await patch(owner.auth, declared, 0, Buffer.from('ab'), { 'Upload-Length': '5' })).status).toBe(204);
    const changed = await patch(owner.auth, declared, 2, Buffer.from('cd'), { 'Upload-Length': '4' });
    expect(changed.status).toBe(400);
    expect(await changed.json()).toMatchObject({ success: false, error: { code: 'invalid_request', message: expect.stringContaining('declared once') } });
    const state = await head(owner.auth, declared);
    expect([state.headers.get('upload-offset'), state.headers.get('upload-length')]).toEqual(['2', '5']);
  });

  it('keeps only the declared length of a deferred upload reserved', async () => {
    const free = await createAccount(t.app, { plan: 'free' });
    const created = await create(free.auth, null);
    expect(created.status).toBe(201);
    const url = locationOf(created);
    expect((await storageOf(t.app, free.accountId)).reserved).toBe(100 * MiB);
    // The length declared on a PATCH that does not finish the upload: from then on only it is reserved.
    const declared = await patch(free.auth, url, 0, Buffer.from('a'), { 'Upload-Length': '3' });
    expect(declared.status).toBe(204);
    expect(declared.headers.get('x-file-id')).toBeNull();
    expect(await storageOf(t.app, free.accountId)).toMatchObject({ used: 0, reserved: 3 });
    const finished = await patch(free.auth, url, 1, Buffer.from('bc'));
    expect(finished.status).toBe(204);
    expect(finished.headers.get('x-file-id')).toMatch(/^file_/);
    expect(await storageOf(t.app, free.accountId)).toMatchObject({ used: 3, reserved: 0 });

    // A stream that ended on a chunk boundary: an empty PATCH changes nothing, and one declaring the offset completes it.
    const boundary = locationOf(await create(free.auth, null));
    expect((await patch(free.auth, boundary, 0, Buffer.from('abcd'))).status).toBe(204);
    const empty = await patch(free.auth, boundary, 4, Buffer.alloc(0));
    expect([empty.status, empty.headers.get('upload-offset'), empty.headers.get('x-file-id')]).toEqual([204, '4', null]);
    const declaredAtTheEnd = await patch(free.auth, boundary, 4, Buffer.alloc(0), { 'Upload-Length': '4' });
    expect(declaredAtTheEnd.status).toBe(204);
    expect(await getFile(declaredAtTheEnd.headers.get('x-file-id')!, free.auth)).toMatchObject({ size: 4, md5_hash: md5(Buffer.from('abcd')) });
  });

  it('holds a deferred length to the plan\'s maximum, from Content-Length or as the bytes stream, and removes the upload', async () => {
    const free = await createAccount(t.app, { plan: 'free' });
    const declared = locationOf(await create(free.auth, null));
    const tooMuch = await streamingPatch(free.auth, declared, 0, 100 * MiB + 1, undefined, 'declared');
    expect(tooMuch.status).toBe(413);
    expect(tooMuch.body).toMatchObject({ error: { code: 'file_too_large', details: { file_size: 100 * MiB + 1, max_size: 100 * MiB, plan: 'free' } } });
    expect((await head(free.auth, declared)).status).toBe(404);

    const streamed = locationOf(await create(free.auth, null));
    const cut = await streamingPatch(free.auth, streamed, 0, 101 * MiB);
    expect(cut.status).toBe(413);
    expect(cut.body).toMatchObject({ error: { code: 'file_too_large', details: { max_size: 100 * MiB, plan: 'free' } } });
    expect((cut.body as { error: { details: { file_size: number } } }).error.details.file_size).toBeGreaterThan(100 * MiB);
    expect((await head(free.auth, streamed)).status).toBe(404);
    expect(await storageOf(t.app, free.accountId)).toMatchObject({ used: 0, reserved: 0 });
  });

  it('holds a deferred upload\'s chunk sent with Upload-Checksum to the plan and the quota before it is checked, not after every byte', async () => {
    // A checksummed chunk is kept aside until its digest is known; a deferred length must not let that be more than the upload may hold.
    const checksum = { 'Upload-Checksum': `md5 ${createHash('md5').update('anything else').digest('base64')}` };
    const free = await createAccount(t.app, { plan: 'free' });
    const declared = locationOf(await create(free.auth, null));
    const tooMuch = await streamingPatch(free.auth, declared, 0, 100 * MiB + 1, undefined, 'declared', checksum);
    expect(tooMuch.status).toBe(413);
    expect(tooMuch.body).toMatchObject({ error: { code: 'file_too_large', details: { file_size: 100 * MiB + 1, max_size: 100 * MiB, plan: 'free' } } });
    expect((await head(free.auth, declared)).status).toBe(404);

    const streamed = locationOf(await create(free.auth, null));
    const cut = await streamingPatch(free.auth, streamed, 0, 101 * MiB, undefined, undefined, checksum);
    expect(cut.status).toBe(413);
    expect(cut.body).toMatchObject({ error: { code: 'file_too_large', details: { max_size: 100 * MiB, plan: 'free' } } });
    expect((await head(free.auth, streamed)).status).toBe(404);
    expect(await storageOf(t.app, free.accountId)).toMatchObject({ used: 0, reserved: 0 });

    const tight = await createAccount(t.app, { plan: 'free', storageLimit: 3 * MiB });
    const url = locationOf(await create(tight.auth, null));
    const over = await streamingPatch(tight.auth, url, 0, 4 * MiB, undefined, undefined, checksum);
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ error: { code: 'storage_exceeded', details: { storage_limit: 3 * MiB } } });
    // All or nothing: a checksummed chunk cut short stores none of its bytes.
    expect((await head(tight.auth, url)).headers.get('upload-offset')).toBe('0');
  });

  it('holds a deferred length to the quota as the bytes stream (storage_exceeded), and resumes once the length fits', async () => {
    const tight = await createAccount(t.app, { plan: 'free', storageLimit: 3 * MiB });
    const content = randomBytes(3 * MiB);
    const url = locationOf(await create(tight.auth, null));
    // The plan's maximum does not fit: it holds what is left.
    expect((await storageOf(t.app, tight.accountId)).reserved).toBe(3 * MiB);
    const over = await streamingPatch(tight.auth, url, 0, 4 * MiB, content);
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ error: { code: 'storage_exceeded', details: { current_usage: 3 * MiB, storage_limit: 3 * MiB } } });
    expect((over.body as { error: { details: { required_space: number } } }).error.details.required_space).toBeGreaterThan(3 * MiB);
    expect(await events(tight.accountId, 'user.quota_exceeded')).toHaveLength(1);

    const offset = Number((await head(tight.auth, url)).headers.get('upload-offset'));
    expect(offset).toBeLessThanOrEqual(3 * MiB);
    const rest = await patch(tight.auth, url, offset, content.subarray(offset), { 'Upload-Length': String(content.length) });
    expect(rest.status).toBe(204);
    expect(await getFile(rest.headers.get('x-file-id')!, tight.auth)).toMatchObject({ size: content.length, md5_hash: md5(content) });
    expect(await storageOf(t.app, tight.accountId)).toMatchObject({ used: 3 * MiB, reserved: 0 });
  });

  it('refuses a chunk without Content-Length that runs past the upload\'s length with 413, and resumes to the right MD5', async () => {
    const content = randomBytes(2 * MiB);
    const url = locationOf(await create(owner.auth, content.length));
    const over = await streamingPatch(owner.auth, url, 0, 3 * MiB, content);
    expect(over.status).toBe(413);
    // Past the upload's own length, not the plan's maximum: not file_too_large, whose details name the plan.
    expect(over.body).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining("past the upload's Upload-Length") } });

    const offset = Number((await head(owner.auth, url)).headers.get('upload-offset'));
    expect(offset).toBeLessThan(content.length);
    // With a Content-Length that says so, refused before a byte is read.
    const declaredOver = await patch(owner.auth, url, offset, Buffer.alloc(content.length - offset + 1));
    expect(declaredOver.status).toBe(413);
    expect(await declaredOver.json()).toMatchObject({ error: { code: 'invalid_request' } });
    expect(Number((await head(owner.auth, url)).headers.get('upload-offset'))).toBe(offset);
    const rest = await patch(owner.auth, url, offset, content.subarray(offset));
    expect(rest.status).toBe(204);
    expect(await getFile(rest.headers.get('x-file-id')!)).toMatchObject({ size: content.length, md5_hash: md5(content) });
  });

  /** A request whose small body is sent chunked (no Content-Length), as streaming clients send one. */
  const chunkedRequest = (method: string, url: string, headers: Record<string, string>, body: Buffer) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: unknown }>((resolve, reject) => {
      const target = new URL(url);
      const req = httpRequest({ host: target.hostname, port: target.port, path: target.pathname, method, headers: { ...headers, 'Transfer-Encoding': 'chunked' } });
      req.on('response', (res) => {
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(Buffer.concat(parts).toString() || 'null') }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const tusHeaders = (auth: Record<string, string>, extra: Record<string, string>) => ({ ...auth, 'Tus-Resumable': '1.0.0', 'Content-Type': 'application/offset+octet-stream', ...extra });

  it('refuses a small chunked body past the upload\'s length, as a PATCH or in the creation, with 413 and the server still up', async () => {
    const url = locationOf(await create(owner.auth, 5));
    const over = await chunkedRequest('PATCH', url, tusHeaders(owner.auth, { 'Upload-Offset': '0' }), Buffer.alloc(20, 1));
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ error: { code: 'invalid_request' } });
    expect((await head(owner.auth, url)).status).toBe(200);

    const before = await storageOf(t.app, owner.accountId);
    const created = await chunkedRequest(
      'POST',
      `${t.baseUrl}/v1/uploads`,
      tusHeaders(owner.auth, { 'Upload-Length': '5', 'Upload-Metadata': metadataHeader({ filename: 'short.bin' }) }),
      Buffer.alloc(20, 2),
    );
    expect(created.status).toBe(413);
    expect(created.headers.location).toBeUndefined();
    // Its client never learned where the upload is: nothing stays reserved for it.
    expect((await storageOf(t.app, owner.accountId)).reserved).toBe(before.reserved);
    expect((await fetch(`${t.baseUrl}/health`)).status).toBe(200);
  });

  it('holds a deferred upload\'s small chunked PATCH to the quota with 413 storage_exceeded, the server still up', async () => {
    const tight = await createAccount(t.app, { plan: 'free', storageLimit: 10_240 });
    const url = locationOf(await create(tight.auth, null));
    const over = await chunkedRequest('PATCH', url, tusHeaders(tight.auth, { 'Upload-Offset': '0' }), Buffer.alloc(100 * 1024, 3));
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ error: { code: 'storage_exceeded' } });
    expect((await head(tight.auth, url)).status).toBe(200);
  });

  it('gives back what a creation reserved when its first bytes are refused: a bad checksum header, a wrong checksum, too many bytes', async () => {
    const before = await storageOf(t.app, owner.accountId);
    const creation = (body: Buffer, extra: Record<string, string>) =>
      fetch(`${t.baseUrl}/v1/uploads`, {
        method: 'POST',
        headers: tusHeaders(owner.auth, { 'Upload-Length': '500000', 'Upload-Metadata': metadataHeader({ filename: 'refused.bin' }), ...extra }),
        body,
      });
    const badHeader = await creation(Buffer.alloc(20), { 'Upload-Checksum': 'md5 not-base64!' });
    expect(badHeader.status).toBe(400);
    const wrongSum = await creation(Buffer.alloc(20), { 'Upload-Checksum': `md5 ${createHash('md5').update('other').digest('base64')}` });
    expect(wrongSum.status).toBe(460);
    const tooMany = await creation(Buffer.alloc(500_001), {});
    expect(tooMany.status).toBe(413);
    for (const answer of [badHeader, wrongSum, tooMany]) expect(answer.headers.get('location')).toBeNull();
    expect((await storageOf(t.app, owner.accountId)).reserved).toBe(before.reserved);
    expect(await t.app.get(DataSource).getRepository(ResumableUploadEntity).countBy({ accountId: owner.accountId, name: 'refused.bin' })).toBe(0);
  });

  it('counts a free plan\'s upload once, not per chunk: 80 chunks complete without a 429', async () => {
    const free = await createAccount(t.app, { plan: 'free' });
    const content = randomBytes(80 * 1024);
    const { fileId } = await tusUpload(t.baseUrl, free.auth, content, { chunkSize: 1024, retryDelays: null });
    expect(await getFile(fileId, free.auth)).toMatchObject({ md5_hash: md5(content) });
  }, 240_000); // A hang guard: on S3 every 1 KiB chunk re-sends the staged remainder, several S3 calls each.

  it.each(['free', 'pro', 'enterprise'] as const)('does not count the PATCHes of an upload against the %s plan\'s rate limit', async (plan) => {
    const account = await createAccount(t.app, { plan });
    const counter = async () => {
      const res = await fetch(`${t.baseUrl}/v1/user/info`, { headers: account.auth });
      return { remaining: Number(res.headers.get('x-ratelimit-remaining')), window: res.headers.get('x-ratelimit-reset') };
    };
    for (let attempt = 1; attempt <= 2; attempt++) {
      const url = locationOf(await create(account.auth, 3 * 1024));
      const before = await counter();
      for (let offset = 0; offset < 3 * 1024; offset += 1024) {
        const sent = await patch(account.auth, url, offset, Buffer.alloc(1024));
        expect(sent.status).toBe(204);
        expect(sent.headers.get('x-ratelimit-remaining')).toBeNull();
      }
      const after = await counter();
      // A minute that turned in between started a fresh window: measured again within one.
      if (after.window !== before.window && attempt < 2) continue;
      expect(after.window).toBe(before.window);
      expect(after.remaining).toBe(before.remaining - 1);
      return;
    }
  });

  it('refuses a second PATCH, a HEAD and a termination while one PATCH is writing to the upload with 423', async () => {
    const created = await create(owner.auth, 2 * MiB);
    const url = new URL(locationOf(created));
    // A PATCH that sends half its body, then goes quiet while holding the upload.
    const slow = httpRequest({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: 'PATCH',
      headers: { ...owner.auth, 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream', 'Content-Length': String(2 * MiB) },
    });
    slow.on('error', () => undefined);
    try {
      slow.write(Buffer.alloc(MiB));
      // Once the slow PATCH holds the upload's lock (not after a guessed delay: a loaded machine may take longer).
      const lock = `${t.config.redisKeyPrefix}:upload-lock:${url.pathname.split('/').pop()}`;
      await eventually(async () => (await t.app.get<Redis>(REDIS).exists(lock)) === 1, 10_000, 'the slow PATCH holding the lock');
      // HEAD and termination wait for the lock too (3 s each, so all at once), and say so the same way (documented:
      // the contract checks every answer).
      const [second, offset, terminate] = await Promise.all([
        patch(owner.auth, url.toString(), 0, Buffer.alloc(2 * MiB)),
        head(owner.auth, url.toString()),
        fetch(url, { method: 'DELETE', headers: { ...owner.auth, 'Tus-Resumable': '1.0.0' } }),
      ]);
      expect([second.status, offset.status, terminate.status]).toEqual([423, 423, 423]);
      expect(await second.json()).toMatchObject({ success: false, error: { code: 'conflict' } });
    } finally {
      slow.destroy();
    }
  });

  it('stores a chunk sent with Upload-Checksum (md5, sha1) only when it matches, answering 460 when it does not', async () => {
    const content = randomBytes(3 * MiB + 11);
    const first = content.subarray(0, 2 * MiB);
    const rest = content.subarray(2 * MiB);
    const checksum = (algorithm: string, bytes: Buffer) => `${algorithm} ${createHash(algorithm).update(bytes).digest('base64')}`;
    const url = locationOf(await create(owner.auth, content.length, { filename: 'checked.bin' }));

    const corrupted = Buffer.from(first);
    corrupted[12345] ^= 0xff;
    const mismatch = await patch(owner.auth, url, 0, corrupted, { 'Upload-Checksum': checksum('sha1', first) });
    expect(mismatch.status).toBe(460);
    // tus names it; Node knows no reason phrase for 460 and would send an empty one.
    expect(mismatch.statusText).toBe('Checksum Mismatch');
    expect(await mismatch.json()).toMatchObject({ success: false, error: { code: 'invalid_request', details: { fields: [{ field: 'Upload-Checksum' }] } } });
    expect((await head(owner.auth, url)).headers.get('upload-offset')).toBe('0');

    const unsupported = await patch(owner.auth, url, 0, first, { 'Upload-Checksum': `crc32 ${Buffer.alloc(4).toString('base64')}` });
    expect(unsupported.status).toBe(400);
    expect(await unsupported.json()).toMatchObject({ error: { code: 'invalid_request', details: { fields: [{ field: 'Upload-Checksum' }] } } });

    const sha1 = await patch(owner.auth, url, 0, first, { 'Upload-Checksum': checksum('sha1', first) });
    expect(sha1.status).toBe(204);
    expect(sha1.headers.get('upload-offset')).toBe(String(first.length));
    const md5Checked = await patch(owner.auth, url, first.length, rest, { 'Upload-Checksum': checksum('md5', rest) });
    expect(md5Checked.status).toBe(204);
    expect(await getFile(md5Checked.headers.get('x-file-id')!)).toMatchObject({ size: content.length, md5_hash: md5(content) });
  });

  it('answers tus discovery and lets browsers send and read the tus headers', async () => {
    const discovery = await fetch(`${t.baseUrl}/v1/uploads`, { method: 'OPTIONS' });
    expect(discovery.status).toBe(204);
    expect(discovery.headers.get('tus-version')).toBe('1.0.0');
    expect(discovery.headers.get('tus-extension')?.split(',')).toEqual(expect.arrayContaining(['creation', 'creation-with-upload', 'creation-defer-length', 'termination', 'expiration', 'checksum']));
    expect(discovery.headers.get('tus-checksum-algorithm')).toBe('md5,sha1');
    const preflight = await fetch(`${t.baseUrl}/v1/uploads/upl_x`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'PATCH', 'Access-Control-Request-Headers': 'upload-offset,tus-resumable' },
    });
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Upload-Offset/);
    const created = await fetch(`${t.baseUrl}/v1/uploads`, {
      method: 'POST',
      headers: { ...owner.auth, Origin: 'https://app.example', 'Tus-Resumable': '1.0.0', 'Upload-Length': '1', 'Upload-Metadata': metadataHeader({ filename: 'x' }) },
    });
    // The protocol's headers, and ours as on every route: a creation retried with its Idempotency-Key says it was replayed.
    for (const exposed of ['Location', 'Upload-Offset', 'Upload-Length', 'Tus-Resumable', 'Upload-Expires', 'X-RateLimit-Remaining', 'Idempotent-Replayed']) {
      expect(created.headers.get('access-control-expose-headers')).toContain(exposed);
    }
  });

  describe('with uploads expiring after four idle seconds', () => {
    let short: TestApp;
    beforeAll(async () => {
      short = await startTestApp({ ...storageEnv(), TUS_UPLOAD_EXPIRY: '4' });
    });
    afterAll(() => short.close());

    it('removes an upload idle past its expiry in the scheduled sweep, giving its quota back', async () => {
      const account = await createAccount(short.app);
      const url = await tusUploadUntil(short.baseUrl, account.auth, randomBytes(2 * MiB), MiB, { chunkSize: MiB });
      expect(await bytesOf(short, url)).not.toEqual([]);
      await sleep(4_100);
      // The job also runs by itself shortly after start; either run removes it.
      await short.app.get(ResumableUploadExpiry).expire();
      expect(await bytesOf(short, url)).toEqual([]);
      expect(await storageOf(short.app, account.accountId)).toMatchObject({ used: 0, reserved: 0 });
      expect((await fetch(url, { method: 'HEAD', headers: { ...account.auth, 'Tus-Resumable': '1.0.0' } })).status).toBe(404);
    });
  });
});
