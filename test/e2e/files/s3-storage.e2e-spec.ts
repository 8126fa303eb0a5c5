import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobStorage, blobKeys } from '../../../src/infra/storage/blob-storage.js';
import { S3BlobStorage } from '../../../src/infra/storage/s3-blob-storage.js';
import { AccountEntity } from '../../../src/modules/accounts/account.entity.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { UploadSweeper } from '../../../src/modules/files/upload/upload-sweeper.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { startS3, type TestS3 } from '../../support/s3.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { onTestServer, rawUpload, upload, uploadOk } from '../../support/uploads.js';

const MiB = 1024 * 1024;

/** The S3 adapter against a real S3-compatible server (s3rver, in this process, on a free port). */
describe('S3 blob storage (STORAGE_DRIVER=s3, against s3rver)', () => {
  let s3: TestS3;
  let t: TestApp;
  let owner: TestAccount;
  const keys = async (prefix: string) => {
    const out: string[] = [];
    for await (const blob of t.app.get(BlobStorage).list(prefix)) out.push(blob.key);
    return out;
  };

  beforeAll(async () => {
    s3 = await startS3();
    t = await startTestApp(s3.env());
    owner = await createAccount(t.app);
  });
  afterAll(async () => {
    await t?.close();
    await s3?.close();
  });

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
