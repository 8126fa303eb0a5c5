import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Transactions } from '../../../src/infra/database/transactions.js';
import { BlobDeletions } from '../../../src/infra/storage/blob-deletions.js';
import { BlobStorage, blobKeys } from '../../../src/infra/storage/blob-storage.js';
import { S3BlobStorage } from '../../../src/infra/storage/s3-blob-storage.js';
import { AccountEntity } from '../../../src/modules/accounts/account.entity.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { UploadSweeper } from '../../../src/modules/files/upload/upload-sweeper.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import { storageOf } from '../../support/files.js';
import { startHoldableProxy, type HoldableProxy } from '../../support/holdable-proxy.js';
import { startS3, startTestAppOnS3, type TestS3 } from '../../support/s3.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { onTestServer, rawUpload, upload, uploadOk } from '../../support/uploads.js';

const MiB = 1024 * 1024;

/** The S3 adapter against a real S3-compatible server (s3rver, in this process, on a free port). */
describe('S3 blob storage (STORAGE_DRIVER=s3, against s3rver)', () => {
  let t: TestApp;
  let owner: TestAccount;
  useTestApp((started) => ({ t, owner } = started), { start: startTestAppOnS3 });
  const keys = async (prefix: string) => {
    const out: string[] = [];
    for await (const blob of t.app.get(BlobStorage).list(prefix)) out.push(blob.key);
    return out;
  };

  it('is the adapter in use', () => {
    expect(t.app.get(BlobStorage)).toBeInstanceOf(S3BlobStorage);
  });

  it('streams a multi-part upload to the bucket and serves it back whole and in ranges', async () => {
    const content = Buffer.alloc(20 * MiB + 123);
    for (let i = 0; i < content.length; i += 4096) content.writeUInt32BE(i, i);
    const file = await uploadOk(t, owner.auth, content, { name: 'big.bin' });
    expect(file.md5_hash).toBe(createHash('md5').update(content).digest('hex'));
    expect(await keys('tmp/')).toEqual([]);
    expect(await keys(blobKeys.filePrefix(owner.accountId, file.id))).toHaveLength(1);
    const whole = await fetch(onTestServer(t, file.download_url));
    expect(whole.status).toBe(200);
    expect(createHash('md5').update(Buffer.from(await whole.arrayBuffer())).digest('hex')).toBe(file.md5_hash);
    const part = await fetch(onTestServer(t, file.download_url), { headers: { Range: `bytes=${10 * MiB}-${10 * MiB + 99}` } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer())).toEqual(content.subarray(10 * MiB, 10 * MiB + 100));
  });

  it('serves ranges at the edges: the first byte, the last, suffixes, and an empty object', async () => {
    // Read into one buffer (up to 64 KiB) and streamed.
    for (const size of [10, 100 * 1024]) {
      const content = Buffer.from(Array.from({ length: size }, (_, i) => i % 251));
      const file = await uploadOk(t, owner.auth, content, { name: `edges-${size}.bin` });
      const cases: Array<[string, number, number]> = [['bytes=0-0', 0, 0], [`bytes=${size - 1}-${size - 1}`, size - 1, size - 1], [`bytes=${size - 1}-`, size - 1, size - 1], ['bytes=-1', size - 1, size - 1], ['bytes=0-1', 0, 1], [`bytes=-${size + 5}`, 0, size - 1]];
      for (const [range, start, end] of cases) {
        const res = await fetch(onTestServer(t, file.download_url), { headers: { Range: range } });
        expect(res.status, `${range} of ${size}`).toBe(206);
        expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${size}`);
        expect(Buffer.from(await res.arrayBuffer())).toEqual(content.subarray(start, end + 1));
      }
    }
    const empty = await uploadOk(t, owner.auth, Buffer.alloc(0), { name: 'empty.bin' });
    const whole = await fetch(onTestServer(t, empty.download_url));
    expect([whole.status, await whole.text()]).toEqual([200, '']);
    expect((await fetch(onTestServer(t, empty.download_url), { headers: { Range: 'bytes=0-0' } })).status).toBe(416);
  });

  it('replaces the object on overwrite and removes it on permanent deletion', async () => {
    const first = await uploadOk(t, owner.auth, 'one', { name: 'o.txt' });
    const before = await keys(blobKeys.filePrefix(owner.accountId, first.id));
    const second = await uploadOk(t, owner.auth, 'two', { name: 'o.txt', overwrite: true });
    // The replaced object is deleted just after the answer (FinishedUploads), not before it.
    const after = await eventually(async () => {
      const found = await keys(blobKeys.filePrefix(owner.accountId, first.id));
      return found.length === 1 ? found : null;
    }, 10_000, 'the replaced object to be deleted');
    expect(second.id).toBe(first.id);
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
    expect(await (await fetch(onTestServer(t, second.download_url))).text()).toBe('two');
    expect((await t.http().delete(`/v1/files/${first.id}?permanent=true`).set(owner.auth)).status).toBe(200);
    expect(await keys(blobKeys.filePrefix(owner.accountId, first.id))).toEqual([]);
  });

  it('answers 500 internal_error for an object cut short in the bucket, read into one buffer or streamed', async () => {
    for (const [size, kept] of [[1000, 600], [200 * 1024, 150 * 1024]]) {
      const content = Buffer.alloc(size, 1);
      const file = await uploadOk(t, owner.auth, content, { name: `cut-${size}.bin` });
      const { blobKey } = await t.app.get(DataSource).getRepository(FileEntity).findOneByOrFail({ id: file.id });
      await t.app.get(BlobStorage).delete(blobKey);
      await t.app.get(BlobStorage).write(blobKey, Readable.from([content.subarray(0, kept)]));
      const res = await fetch(onTestServer(t, file.download_url), { signal: AbortSignal.timeout(10_000) });
      expect(res.status, `${size} bytes`).toBe(500);
      expect(((await res.json()) as any).error.code).toBe('internal_error');
      // A range past the cut: S3 refuses it (InvalidRange), which is the object's damage, not the bucket being unavailable.
      const past = await fetch(onTestServer(t, file.download_url), { headers: { Range: `bytes=${kept + 10}-${kept + 19}` }, signal: AbortSignal.timeout(10_000) });
      expect(past.status, `${size} bytes, past the cut`).toBe(500);
    }
  });

  it('leaves no object and no reservation behind when an upload is refused or abandoned', async () => {
    const small = await createAccount(t.app, { storageLimit: 1000 });
    const refused = await upload(t, small.auth, Buffer.alloc(5000), { name: 'x.bin' });
    expect(refused.status).toBe(413);
    const quitter = await createAccount(t.app);
    expect((await rawUpload(t, quitter.auth, { fileSize: 12 * MiB, declaredLength: 12 * MiB + 300, abortAfter: 6 * MiB })).outcome).toBe('aborted');
    const reserved = async () =>
      (await t.app.get(DataSource).getRepository(AccountEntity).findBy({})).reduce((sum, a) => sum + a.storageReserved, 0);
    await eventually(async () => (await keys('tmp/')).length === 0 && (await reserved()) === 0, 10_000, 'the refused and abandoned uploads to be cleaned up');
    expect(await keys('tmp/')).toEqual([]);
    expect(await reserved()).toBe(0);
  });

  it('sweeps temporary objects that no upload owns', async () => {
    await t.app.get(BlobStorage).write('tmp/upl_stray', Readable.from([Buffer.from('stray')]));
    expect((await t.app.get(UploadSweeper).sweep(-1000)).blobs).toBe(1);
    expect(await keys('tmp/')).toEqual([]);
  });
});

describe('S3 blob storage while the bucket cannot be reached', () => {
  let s3: TestS3;
  let proxy: HoldableProxy;
  let t: TestApp;
  let owner: TestAccount;

  beforeAll(async () => {
    s3 = await startS3();
    proxy = await startHoldableProxy(s3.port);
    t = await startTestApp(s3.env(proxy.port));
    owner = await createAccount(t.app);
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    await s3?.close();
  });

  it('answers uploads and downloads 503 service_unavailable with Retry-After, and changes no file, quota or object', async () => {
    const kept = await uploadOk(t, owner.auth, 'kept as it was', { name: 'kept.txt' });
    const large = await uploadOk(t, owner.auth, Buffer.alloc(200 * 1024, 3), { name: 'large.bin' });
    const before = await storageOf(t.app, owner.accountId);
    const port = proxy.port;
    await proxy.close();
    try {
      // Read into one buffer (up to 64 KiB) and streamed.
      for (const file of [kept, large]) {
        const res = await fetch(onTestServer(t, file.download_url), { signal: AbortSignal.timeout(15_000) });
        expect(res.status, file.name).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(((await res.json()) as any).error.code).toBe('service_unavailable');
      }
      // Held in memory (up to 64 KiB), charged at commit (up to 1 MiB), reserved as it streams, and an overwrite.
      const attempts: Array<[Buffer | string, { name: string; overwrite?: boolean }]> = [
        ['new', { name: 'new.txt' }],
        [Buffer.alloc(500 * 1024, 1), { name: 'mid.bin' }],
        [Buffer.alloc(3 * MiB, 2), { name: 'big.bin' }],
        ['replaced?', { name: 'kept.txt', overwrite: true }],
      ];
      for (const [content, options] of attempts) {
        const res = await upload(t, owner.auth, content, options);
        expect(res.status, options.name).toBe(503);
        expect(res.body.error.code).toBe('service_unavailable');
        expect(res.headers.get('retry-after')).toBe('5');
      }
      expect(await storageOf(t.app, owner.accountId)).toEqual(before);
    } finally {
      proxy = await startHoldableProxy(s3.port, port);
    }
    const listed = await t.http().get('/v1/files').set(owner.auth).expect(200);
    expect(listed.body.data.map((f: { name: string }) => f.name).sort()).toEqual(['kept.txt', 'large.bin']);
    expect(await (await fetch(onTestServer(t, kept.download_url))).text()).toBe('kept as it was');
    const info = await t.http().get('/v1/user/info').set(owner.auth).expect(200);
    expect(info.body.data.storage.used).toBe(before.used);
    const temporary: string[] = [];
    for await (const blob of t.app.get(BlobStorage).list('tmp/')) temporary.push(blob.key);
    expect(temporary).toEqual([]);
  }, 60_000);

  it('answers resumable uploads 503 service_unavailable while the bucket cannot be reached, holding no quota, and they resume after', async () => {
    const tus = { ...owner.auth, 'Tus-Resumable': '1.0.0' };
    const metadata = (name: string) => `filename ${Buffer.from(name).toString('base64')}`;
    const create = (name: string, length: number) =>
      fetch(`${t.baseUrl}/v1/uploads`, { method: 'POST', headers: { ...tus, 'Upload-Length': String(length), 'Upload-Metadata': metadata(name) }, signal: AbortSignal.timeout(30_000) });
    const patch = (url: string, offset: number, body: Buffer) =>
      fetch(url, { method: 'PATCH', headers: { ...tus, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' }, body, signal: AbortSignal.timeout(30_000) });
    const content = Buffer.alloc(6 * MiB, 7);
    const started = await create('resumed.bin', content.length);
    expect(started.status).toBe(201);
    const url = new URL(started.headers.get('location')!, t.baseUrl).toString();
    const before = await storageOf(t.app, owner.accountId);
    const port = proxy.port;
    await proxy.close();
    try {
      const refused = await create('refused.bin', 1000);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect(((await refused.json()) as any).error.code).toBe('service_unavailable');
      const cut = await patch(url, 0, content);
      expect(cut.status).toBe(503);
      expect(((await cut.json()) as any).error.code).toBe('service_unavailable');
      expect(await storageOf(t.app, owner.accountId)).toEqual(before);
    } finally {
      proxy = await startHoldableProxy(s3.port, port);
    }
    const offset = Number((await fetch(url, { method: 'HEAD', headers: tus })).headers.get('upload-offset'));
    const finished = await patch(url, offset, content.subarray(offset));
    expect(finished.status).toBe(204);
    const file = (await t.http().get('/v1/files').set(owner.auth).expect(200)).body.data.find((f: { name: string }) => f.name === 'resumed.bin');
    expect(file.md5_hash).toBe(createHash('md5').update(content).digest('hex'));
  }, 90_000);

  it('deletes for good while the bucket cannot be reached, and removes the objects once it is back', async () => {
    const deleted = await uploadOk(t, owner.auth, 'deleted for good', { name: 'gone.txt' });
    const trashed = await uploadOk(t, owner.auth, 'emptied from the trash', { name: 'trashed.txt' });
    await t.http().delete(`/v1/files/${trashed.id}`).set(owner.auth).expect(200);
    const storage = t.app.get(BlobStorage);
    const objectsOf = async (fileId: string) => {
      const found: string[] = [];
      for await (const blob of storage.list(blobKeys.filePrefix(owner.accountId, fileId))) found.push(blob.key);
      return found;
    };
    expect((await objectsOf(deleted.id)).length + (await objectsOf(trashed.id)).length).toBe(2);
    const port = proxy.port;
    await proxy.close();
    try {
      // The rows go (the files are deleted as asked); the objects cannot, for now.
      await t.http().delete(`/v1/files/${deleted.id}?permanent=true`).set(owner.auth).expect(200);
      expect((await t.http().delete('/v1/trash').set(owner.auth).expect(200)).body.data.deleted_count).toBe(1);
    } finally {
      proxy = await startHoldableProxy(s3.port, port);
    }
    expect((await objectsOf(deleted.id)).length + (await objectsOf(trashed.id)).length).toBe(2);
    // The sweeper's pass a minute later deletes them.
    await t.app.get(UploadSweeper).sweep();
    const deletions = t.app.get(BlobDeletions);
    expect(await deletions.retryPending(new Date(Date.now() + 2 * 60_000))).toBe(2);
    expect([...(await objectsOf(deleted.id)), ...(await objectsOf(trashed.id))]).toEqual([]);
    expect(await deletions.retryPending(new Date(Date.now() + 2 * 60_000))).toBe(0);
  }, 90_000);

  it('retries every recorded deletion in one pass, past a batch of a thousand', async () => {
    const deletions = t.app.get(BlobDeletions);
    const keys = Array.from({ length: 1_234 }, (_, i) => blobKeys.temp(`gone_${String(i).padStart(5, '0')}`));
    await t.app.get(Transactions).run((tx) => BlobDeletions.record(tx, keys, new Date(Date.now() - 5 * 60_000)));
    // Objects already gone count as deleted; nothing is left for the next sweep.
    expect(await deletions.retryPending(new Date())).toBe(1_234);
    expect(await deletions.retryPending(new Date())).toBe(0);
  }, 60_000);

  it('answers a download 503 in well under a minute, not never, while the bucket takes requests but does not answer', async () => {
    const file = await uploadOk(t, owner.auth, 'behind a stalled bucket', { name: 'stalled.txt' });
    proxy.hold();
    try {
      const started = Date.now();
      const res = await fetch(onTestServer(t, file.download_url), { signal: AbortSignal.timeout(60_000) });
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).error.code).toBe('service_unavailable');
      // Three attempts of at most 10 s each.
      expect(Date.now() - started).toBeLessThan(45_000);
    } finally {
      proxy.release();
    }
    expect(await (await fetch(onTestServer(t, file.download_url))).text()).toBe('behind a stalled bucket');
  }, 90_000);

  it('keeps an overwrite that committed when the bucket fails before its bytes are in place: answered, then placed once the bucket is back', async () => {
    const first = await uploadOk(t, owner.auth, 'first version', { name: 'report.txt' });
    const before = await storageOf(t.app, owner.accountId);
    const storage = t.app.get(BlobStorage);
    const move = storage.move.bind(storage);
    const port = proxy.port;
    // The bucket goes away between the temporary write and the move to the key the committed row names.
    const cut = vi.spyOn(storage, 'move').mockImplementationOnce(async (from, to) => {
      await proxy.close();
      return move(from, to);
    });
    try {
      const res = await upload(t, owner.auth, 'second version', { name: 'report.txt', overwrite: true });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ id: first.id, size: 'second version'.length });
      // Until the bytes are in place a download is told to come back, not given the old bytes or a 500.
      const early = await fetch(onTestServer(t, res.body.data.download_url), { signal: AbortSignal.timeout(15_000) });
      expect(early.status).toBe(503);
      expect(early.headers.get('retry-after')).toBeTruthy();
    } finally {
      cut.mockRestore();
      proxy = await startHoldableProxy(s3.port, port);
    }
    const file = (await t.http().get(`/v1/files/${first.id}`).set(owner.auth).expect(200)).body.data;
    const served = await eventually(async () => {
      const res = await fetch(onTestServer(t, file.download_url));
      return res.status === 200 ? res.text() : null;
    }, 20_000, 'the new bytes to be placed');
    expect(served).toBe('second version');
    expect(await storageOf(t.app, owner.accountId)).toEqual({ ...before, used: before.used + 1, sumOfFiles: before.sumOfFiles + 1 });
    // Only the new version's object is left, and nothing temporary.
    const objects = await eventually(async () => {
      const found: string[] = [];
      for await (const blob of storage.list(blobKeys.filePrefix(owner.accountId, first.id))) found.push(blob.key);
      return found.length === 1 ? found : null;
    }, 20_000, 'the replaced object to be deleted');
    expect(objects).toHaveLength(1);
    const temporary: string[] = [];
    for await (const blob of storage.list('tmp/')) temporary.push(blob.key);
    expect(temporary).toEqual([]);
  }, 60_000);
});
