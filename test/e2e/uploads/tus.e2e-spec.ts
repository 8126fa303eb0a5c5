import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxEventEntity } from '../../../src/infra/outbox/outbox-event.entity.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { UploadSweeper } from '../../../src/modules/files/upload/upload-sweeper.js';
import { ResumableUploadExpiry } from '../../../src/modules/uploads/resumable-upload-expiry.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { storageOf } from '../../support/files.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { sleep } from '../../support/time.js';
import { cuttingProxy, tusUpload, tusUploadUntil } from '../../support/tus.js';
import { listBlobs, uploadOk } from '../../support/uploads.js';

const MiB = 1024 * 1024;
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const md5 = (content: Buffer) => createHash('md5').update(content).digest('hex');
const b64 = (value: string) => Buffer.from(value).toString('base64');
const metadataHeader = (metadata: Record<string, string>) =>
  Object.entries(metadata)
    .map(([k, v]) => `${k} ${b64(v)}`)
    .join(',');

describe('resumable uploads (tus 1.0) with tus-js-client', () => {
  let t: TestApp;
  let owner: TestAccount;

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
  const head = (auth: Record<string, string>, url: string) => fetch(url, { method: 'HEAD', headers: { ...auth, 'Tus-Resumable': '1.0.0' } });
  const getFile = async (id: string, auth = owner.auth) => (await fetch(`${t.baseUrl}/v1/files/${id}`, { headers: auth }).then((r) => r.json() as Promise<{ data: Record<string, unknown> }>)).data;
  /** The upload URL a creation answered (Location is relative). */
  const locationOf = (created: Response) => new URL(created.headers.get('location')!, t.baseUrl).toString();
  const events = async (accountId: string, name: string) =>
    (await t.app.get(DataSource).getRepository(OutboxEventEntity).findBy({ accountId, event: name })).map((e) => JSON.parse(e.payload));

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createAccount(t.app);
  });
  afterAll(() => t.close());

  it('uploads in chunks into a file, as the multipart upload would: MD5, detected type, quota, file.uploaded', async () => {
    const folder = (await fetch(`${t.baseUrl}/v1/folders`, { method: 'POST', headers: { ...owner.auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Pictures' }) }).then((r) => r.json() as Promise<{ data: Record<string, unknown> }>)).data;
    const content = Buffer.concat([PNG, randomBytes(3 * MiB + 123)]);
    const { fileId } = await tusUpload(t.baseUrl, owner.auth, content, { chunkSize: MiB, metadata: { filename: 'photo.bin', name: 'holiday.png', folder_id: String(folder.id) } });
    const file = await getFile(fileId);
    expect(file).toMatchObject({ id: fileId, name: 'holiday.png', folder_id: folder.id, size: content.length, md5_hash: md5(content), type: 'image/png', category: 'image' });
    expect(await storageOf(t.app, owner.accountId)).toMatchObject({ reserved: 0 });
    expect((await events(owner.accountId, 'file.uploaded')).map((e) => e.file.id)).toContain(fileId);
    expect(listBlobs(t, 'tmp')).toEqual([]);
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

  it('uploads a 64 MiB file through a connection cut at random points, resuming to the right MD5', async () => {
    const content = randomBytes(64 * MiB);
    const cutAt = Array.from({ length: 4 }, () => Math.floor(Math.random() * 60 * MiB) + 2 * MiB);
    const proxy = await cuttingProxy(Number(new URL(t.baseUrl).port), cutAt);
    try {
      const { fileId } = await tusUpload(`http://127.0.0.1:${proxy.port}`, owner.auth, content, {
        metadata: { filename: 'big.bin' },
        chunkSize: 16 * MiB,
      });
      expect(proxy.cuts()).toBeGreaterThan(0);
      expect(await getFile(fileId)).toMatchObject({ size: content.length, md5_hash: md5(content) });
    } finally {
      await proxy.close();
    }
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
  });

  it('refuses bad metadata, a missing folder, a file over the plan\'s maximum and one over the quota with the multipart upload\'s errors', async () => {
    const noName = await create(owner.auth, 10, { name: 'x.txt' });
    expect(noName.status).toBe(400);
    expect(noName.headers.get('content-type')).toMatch(/application\/json/);
    expect(await noName.json()).toMatchObject({ error: { code: 'invalid_request', details: { fields: [{ field: 'filename' }] } } });
    expect(await (await create(owner.auth, 10, { filename: 'a', folder_id: 'fld_missing' })).json()).toMatchObject({ error: { code: 'not_found' } });

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
    const tempKey = `tmp/${new URL(url).pathname.split('/').pop()}`;
    expect(listBlobs(t, 'tmp')).toContain(tempKey);
    expect((await storageOf(t.app, account.accountId)).reserved).toBe(4 * MiB);
    const terminated = await fetch(url, { method: 'DELETE', headers: { ...account.auth, 'Tus-Resumable': '1.0.0' } });
    expect(terminated.status).toBe(204);
    expect(listBlobs(t, 'tmp')).not.toContain(tempKey);
    expect(await storageOf(t.app, account.accountId)).toMatchObject({ used: 0, reserved: 0 });
    expect((await head(account.auth, url)).status).toBe(404);
  });

  it('enforces the plan\'s maximum on a deferred length while the bytes stream, and keeps only the declared length reserved', async () => {
    const free = await createAccount(t.app, { plan: 'free' });
    const created = await create(free.auth, null);
    expect(created.status).toBe(201);
    const url = locationOf(created);
    expect((await storageOf(t.app, free.accountId)).reserved).toBe(100 * MiB);
    const declared = await patch(free.auth, url, 0, Buffer.from('abc'), { 'Upload-Length': '3' });
    expect(declared.status).toBe(204);
    expect(declared.headers.get('x-file-id')).toBeTruthy();
    expect(await storageOf(t.app, free.accountId)).toMatchObject({ used: 3, reserved: 0 });

    const other = locationOf(await create(free.auth, null));
    const tooMuch = await patch(free.auth, other, 0, Buffer.alloc(100 * MiB + 1));
    expect(tooMuch.status).toBe(413);
    expect(await tooMuch.json()).toMatchObject({ error: { code: 'file_too_large' } });
  });

  it('counts a free plan\'s upload once, not per chunk: 80 chunks complete without a 429', async () => {
    const free = await createAccount(t.app, { plan: 'free' });
    const content = randomBytes(80 * 1024);
    const { fileId } = await tusUpload(t.baseUrl, free.auth, content, { chunkSize: 1024, retryDelays: null });
    expect(await getFile(fileId, free.auth)).toMatchObject({ md5_hash: md5(content) });
  });

  it('refuses a second PATCH while one is writing to the upload with 423', async () => {
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
    slow.write(Buffer.alloc(MiB));
    await sleep(500);
    const second = await patch(owner.auth, url.toString(), 0, Buffer.alloc(2 * MiB));
    expect(second.status).toBe(423);
    expect(await second.json()).toMatchObject({ success: false, error: { code: 'conflict' } });
    slow.destroy();
  });

  it('answers tus discovery and lets browsers send and read the tus headers', async () => {
    const discovery = await fetch(`${t.baseUrl}/v1/uploads`, { method: 'OPTIONS' });
    expect(discovery.status).toBe(204);
    expect(discovery.headers.get('tus-version')).toBe('1.0.0');
    expect(discovery.headers.get('tus-extension')).toContain('creation');
    const preflight = await fetch(`${t.baseUrl}/v1/uploads/upl_x`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'PATCH', 'Access-Control-Request-Headers': 'upload-offset,tus-resumable' },
    });
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Upload-Offset/);
    const created = await fetch(`${t.baseUrl}/v1/uploads`, {
      method: 'POST',
      headers: { ...owner.auth, Origin: 'https://app.example', 'Tus-Resumable': '1.0.0', 'Upload-Length': '1', 'Upload-Metadata': metadataHeader({ filename: 'x' }) },
    });
    for (const exposed of ['Location', 'Upload-Offset', 'Upload-Length', 'Tus-Resumable', 'Upload-Expires']) {
      expect(created.headers.get('access-control-expose-headers')).toContain(exposed);
    }
  });

  describe('with uploads expiring after one idle second', () => {
    let short: TestApp;
    beforeAll(async () => {
      short = await startTestApp({ TUS_UPLOAD_EXPIRY: '1' });
    });
    afterAll(() => short.close());

    it('removes an upload idle past its expiry in the scheduled sweep, giving its quota back', async () => {
      const account = await createAccount(short.app);
      const url = await tusUploadUntil(short.baseUrl, account.auth, randomBytes(2 * MiB), MiB, { chunkSize: MiB });
      const tempKey = `tmp/${new URL(url).pathname.split('/').pop()}`;
      expect(listBlobs(short, 'tmp')).toContain(tempKey);
      await sleep(1_100);
      // The job also runs by itself shortly after start; either run removes it.
      await short.app.get(ResumableUploadExpiry).expire();
      expect(listBlobs(short, 'tmp')).not.toContain(tempKey);
      expect(await storageOf(short.app, account.accountId)).toMatchObject({ used: 0, reserved: 0 });
      expect((await fetch(url, { method: 'HEAD', headers: { ...account.auth, 'Tus-Resumable': '1.0.0' } })).status).toBe(404);
    });
  });

  describe('on the S3 storage driver', () => {
    let s3: TestApp;
    beforeAll(async () => {
      // Never contacted: the uploads answer before any storage call.
      s3 = await startTestApp({ STORAGE_DRIVER: 's3', S3_BUCKET: 'unused', S3_ENDPOINT: 'http://127.0.0.1:9', S3_FORCE_PATH_STYLE: 'true' });
    });
    afterAll(() => s3.close());

    it('answers 503 service_unavailable, pointing to the multipart upload, and reserves nothing', async () => {
      const account = await createAccount(s3.app);
      const res = await fetch(`${s3.baseUrl}/v1/uploads`, {
        method: 'POST',
        headers: { ...account.auth, 'Tus-Resumable': '1.0.0', 'Upload-Length': '10', 'Upload-Metadata': metadataHeader({ filename: 'a' }) },
      });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ success: false, error: { code: 'service_unavailable' } });
      expect(await storageOf(s3.app, account.accountId)).toMatchObject({ reserved: 0 });
    });
  });
});
