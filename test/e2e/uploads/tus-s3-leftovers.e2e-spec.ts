import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Clock } from '../../../src/common/clock.js';
import { BlobStorage } from '../../../src/infra/storage/blob-storage.js';
import { ResumableUploadExpiry } from '../../../src/modules/uploads/resumable-upload-expiry.js';
import { createAccount } from '../../support/accounts.js';
import { storageOf } from '../../support/files.js';
import { startHoldableProxy, type HoldableProxy } from '../../support/holdable-proxy.js';
import { startS3, type TestS3 } from '../../support/s3.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { tusUpload, tusUploadUntil } from '../../support/tus.js';

const MiB = 1024 * 1024;

/**
 * What an unfinished resumable upload holds on S3 (an unfinished multipart upload at tmp/<id> and the bytes too few for
 * a part at tus-parts/<id>) is removed with it, by a termination or by expiry; a bucket out of reach postpones that, and
 * loses nothing nor leaves anything behind.
 */
describe('resumable uploads on S3 leave nothing in the bucket', () => {
  let s3: TestS3;
  let proxy: HoldableProxy;
  let t: TestApp;
  const tus = (auth: Record<string, string>) => ({ ...auth, 'Tus-Resumable': '1.0.0' });
  /** What the bucket holds for the upload at `url`: its temporary object, staged incomplete part and unfinished multipart upload. */
  const bucketLeftovers = async (url: string) => {
    const id = new URL(url).pathname.split('/').pop()!;
    const keys: string[] = [];
    for (const prefix of ['tmp/', 'tus-parts/']) for await (const blob of t.app.get(BlobStorage).list(prefix)) keys.push(blob.key);
    return [...keys, ...s3.unfinishedMultipartUploads().map((key) => `multipart upload ${key}`)].filter((key) => key.endsWith(id));
  };
  /** Runs `during` with the bucket out of reach, then brings it back on the same port. */
  const whileBucketUnreachable = async (during: () => Promise<void>) => {
    const port = proxy.port;
    await proxy.close();
    try {
      await during();
    } finally {
      proxy = await startHoldableProxy(s3.port, port);
    }
  };
  /** An upload of 12 MiB stopped after 9: one 8 MiB part in its multipart upload, 1 MiB staged as an incomplete part. */
  const unfinishedUpload = async (auth: Record<string, string>) => {
    const url = await tusUploadUntil(t.baseUrl, auth, randomBytes(12 * MiB), 9 * MiB, { chunkSize: 9 * MiB });
    expect(await bucketLeftovers(url)).toHaveLength(2);
    return url;
  };

  beforeAll(async () => {
    s3 = await startS3();
    proxy = await startHoldableProxy(s3.port);
    t = await startTestApp(s3.env(proxy.port));
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    await s3?.close();
  });

  it('answers a termination 503 while the bucket cannot be reached, keeping the upload, and removes all of it once it is back', async () => {
    const account = await createAccount(t.app);
    const url = await unfinishedUpload(account.auth);
    await whileBucketUnreachable(async () => {
      const refused = await fetch(url, { method: 'DELETE', headers: tus(account.auth), signal: AbortSignal.timeout(30_000) });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect(((await refused.json()) as any).error.code).toBe('service_unavailable');
    });
    const kept = await fetch(url, { method: 'HEAD', headers: tus(account.auth) });
    expect([kept.status, kept.headers.get('upload-offset')]).toEqual([200, String(9 * MiB)]);
    expect((await storageOf(t.app, account.accountId)).reserved).toBe(12 * MiB);

    expect((await fetch(url, { method: 'DELETE', headers: tus(account.auth) })).status).toBe(204);
    expect(await bucketLeftovers(url)).toEqual([]);
    expect(await storageOf(t.app, account.accountId)).toMatchObject({ used: 0, reserved: 0 });
  }, 60_000);

  it('answers a PATCH during which the bucket goes away 503 service_unavailable, and the upload resumes once it is back', async () => {
    const account = await createAccount(t.app);
    const content = randomBytes(30 * MiB);
    const created = await fetch(`${t.baseUrl}/v1/uploads`, {
      method: 'POST',
      headers: { ...tus(account.auth), 'Upload-Length': String(content.length), 'Upload-Metadata': `filename ${Buffer.from('cut.bin').toString('base64')}` },
    });
    const url = new URL(created.headers.get('location')!, t.baseUrl);
    const port = proxy.port;
    // The whole upload in one PATCH; the bucket goes away once 12 MiB are sent (a part is on its way to it by then).
    const answer = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = httpRequest({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'PATCH',
        headers: { ...tus(account.auth), 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream', 'Content-Length': String(content.length) },
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (piece) => (text += piece));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      const send = async () => {
        for (let sent = 0; sent < content.length && !req.destroyed; sent += MiB) {
          if (sent === 12 * MiB) await proxy.close();
          if (!req.write(content.subarray(sent, sent + MiB))) await new Promise((drained) => req.once('drain', drained));
        }
        req.end();
      };
      send().catch(reject);
    });
    proxy = await startHoldableProxy(s3.port, port);
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe('service_unavailable');
    expect((await storageOf(t.app, account.accountId)).reserved).toBe(content.length);

    const { fileId } = await tusUpload(t.baseUrl, account.auth, content, { uploadUrl: url.toString(), chunkSize: 8 * MiB });
    const file = (await t.http().get(`/v1/files/${fileId}`).set(account.auth).expect(200)).body.data;
    expect(file.md5_hash).toBe(createHash('md5').update(content).digest('hex'));
    expect(await bucketLeftovers(url.toString())).toEqual([]);
    expect(await storageOf(t.app, account.accountId)).toMatchObject({ used: content.length, reserved: 0 });
  }, 90_000);

  it('expires an upload whose bucket cannot be reached on a later pass, once it is back, leaving nothing behind', async () => {
    const account = await createAccount(t.app);
    const url = await unfinishedUpload(account.auth);
    const expiry = t.app.get(ResumableUploadExpiry);
    // The expiry job's clock a day on: the upload has been idle past TUS_UPLOAD_EXPIRY. Other tests' uploads may expire
    // in the same passes, so this one's state tells what a pass did.
    const dayLater = new Date(Date.now() + 25 * 60 * 60 * 1000);
    const clock = vi.spyOn(t.app.get(Clock), 'now').mockImplementation(() => dayLater);
    try {
      await whileBucketUnreachable(() => expiry.expire().then(() => undefined));
      // Kept, bytes and quota, until its bytes can go.
      expect(await bucketLeftovers(url)).toHaveLength(2);
      expect((await storageOf(t.app, account.accountId)).reserved).toBe(12 * MiB);

      await expiry.expire();
    } finally {
      clock.mockRestore();
    }
    expect(await bucketLeftovers(url)).toEqual([]);
    expect(await storageOf(t.app, account.accountId)).toMatchObject({ used: 0, reserved: 0 });
    expect((await fetch(url, { method: 'HEAD', headers: tus(account.auth) })).status).toBe(404);
  }, 60_000);
});
