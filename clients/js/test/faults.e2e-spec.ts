import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { idempotencyRecordKey } from '../../../src/common/idempotency/idempotency.interceptor.js';
import { REDIS } from '../../../src/infra/redis/redis.module.js';
import { createAccount, type TestAccount } from '../../../test/support/accounts.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { eventually, sleep } from '../../../test/support/time.js';
import { ConflictError, ConnectionError, FileStorage, InvalidRequestError } from '../src/index.js';
import { startTestProxy } from './support/test-proxy.js';

const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');

describe('the JavaScript client at the edges: concurrent retries, held uploads, malformed names, cut downloads', () => {
  let t: TestApp;
  let account: TestAccount;
  let redis: Redis;

  beforeAll(async () => {
    t = await startTestApp();
    account = await createAccount(t.app);
    redis = t.app.get<Redis>(REDIS);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Records the status of every POST the client sends, and whether its answer was a replay. */
  function recordingPosts() {
    const posts: Array<{ status: number; replayed: boolean }> = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === 'POST') posts.push({ status: response.status, replayed: response.headers.get('idempotent-replayed') === 'true' });
      return response;
    };
    return { posts, fetch: recordingFetch };
  }

  it('waits while the first upload with its Idempotency-Key still runs (409 idempotency_key_in_use) and answers the file it made', async () => {
    const key = randomUUID();
    const content = randomBytes(100_000);
    const boundary = 'slowBoundary';
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nslow.bin\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
    // The first attempt, whose body arrives slowly (chunked, as the client sends it, so both are the same request).
    const url = new URL('/v1/files/upload', t.baseUrl);
    const first = httpRequest({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: 'POST',
      headers: { ...account.auth, 'Idempotency-Key': key, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
    });
    const firstAnswer = new Promise<{ status: number; body: { data: { id: string } } }>((resolve, reject) => {
      first.on('response', (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
      });
      first.on('error', reject);
    });
    firstAnswer.catch(() => undefined); // awaited below
    try {
      first.write(head);
      first.write(content.subarray(0, 50_000));
      await eventually(async () => (await redis.exists(idempotencyRecordKey(t.config.redisKeyPrefix, account, key))) === 1, 10_000, 'the first attempt holding its key');

      const recorder = recordingPosts();
      const client = new FileStorage({ apiKey: account.apiKey, baseUrl: t.baseUrl, maxRetries: 4, fetch: recorder.fetch });
      const retried = client.files.upload(content, { name: 'slow.bin', idempotencyKey: key });
      retried.catch(() => undefined); // awaited below; a failure is reported there
      // The rest of the first attempt's body arrives after the client has been told the key is in use.
      await eventually(async () => recorder.posts.length > 0, 10_000, "the client's first attempt");
      await sleep(1_500);
      first.end(Buffer.concat([content.subarray(50_000), Buffer.from(`\r\n--${boundary}--\r\n`)]));

      const file = await retried;
      const original = await firstAnswer;
      expect(original.status).toBe(200);
      expect(file).toMatchObject({ id: original.body.data.id, name: 'slow.bin', md5_hash: md5(content) });
      expect(recorder.posts[0]).toEqual({ status: 409, replayed: false });
      expect(recorder.posts.at(-1)).toEqual({ status: 200, replayed: true });
      const names: string[] = [];
      for await (const f of client.files.listAll()) names.push(f.name);
      expect(names).toEqual(['slow.bin']);
    } finally {
      first.destroy();
    }
  });

  it('raises a plain 409 conflict at once, without retrying', async () => {
    const other = await createAccount(t.app);
    const recorder = recordingPosts();
    const client = new FileStorage({ apiKey: other.apiKey, baseUrl: t.baseUrl, fetch: recorder.fetch });
    // A delivery to an address nobody answers stays pending while its attempts go on: it cannot be redelivered yet.
    const webhook = await client.webhooks.create({ url: 'http://127.0.0.1:9/hooks', events: ['file.uploaded'] });
    const delivery = await client.webhooks.test(webhook.id);
    recorder.posts.length = 0;
    const refused = await client.webhooks.redeliver(webhook.id, delivery.id).catch((e) => e);
    expect(refused).toBeInstanceOf(ConflictError);
    expect(refused).toMatchObject({ status: 409, code: 'conflict' });
    expect(recorder.posts).toEqual([{ status: 409, replayed: false }]);
  });

  /**
   * A fetch whose `cutPatch`-th PATCH of a resumable upload dies on the way, as a connection the network dropped, while
   * the server goes on holding the upload's lock for `heldMs` (until it notices: in production its idle timeout plus
   * the lock's expiry). Records the status of every HEAD.
   */
  function cutOffPatch(cutPatch: number, heldMs: number) {
    const heads: number[] = [];
    let patches = 0;
    const faultyFetch: typeof fetch = async (input, init) => {
      if (init?.method === 'PATCH' && ++patches === cutPatch) {
        const uploadId = new URL(String(input)).pathname.split('/').pop();
        await redis.set(`${t.config.redisKeyPrefix}:upload-lock:${uploadId}`, 'a PATCH cut off', 'PX', heldMs, 'NX');
        throw new TypeError('fetch failed', { cause: new Error('other side closed') });
      }
      const response = await fetch(input, init);
      if (init?.method === 'HEAD') heads.push(response.status);
      return response;
    };
    return { heads, fetch: faultyFetch };
  }

  it('resumes an upload the server still holds for a PATCH that was cut off (423), once the server lets it go', async () => {
    const bytes = randomBytes(1024 * 1024 + 4321);
    const network = cutOffPatch(2, 6_000);
    const client = new FileStorage({ apiKey: account.apiKey, baseUrl: t.baseUrl, resumableThresholdBytes: 1024 * 1024, resumableChunkBytes: 256 * 1024, fetch: network.fetch });
    const progress: number[] = [];
    const file = await client.files.upload(new Blob([bytes]), { name: 'held.bin', onProgress: ({ loaded }) => progress.push(loaded) });
    expect(file).toMatchObject({ name: 'held.bin', size: bytes.length, md5_hash: md5(bytes) });
    expect(progress.at(-1)).toBe(bytes.length);
    // Told the upload is locked at least once, it asked again until the lock was let go.
    expect(network.heads[0]).toBe(423);
    expect(network.heads.at(-1)).toBe(200);
  });

  it('gives up on an upload held longer than resumableRetryMs with a ConflictError (423)', async () => {
    const network = cutOffPatch(1, 6_000);
    const client = new FileStorage({ apiKey: account.apiKey, baseUrl: t.baseUrl, resumableThresholdBytes: 1024, resumableRetryMs: 2_000, fetch: network.fetch });
    const refused = await client.files.upload(new Blob([randomBytes(4096)]), { name: 'held-too-long.bin' }).catch((e) => e);
    expect(refused).toBeInstanceOf(ConflictError);
    expect(refused).toMatchObject({ status: 423, code: 'conflict' });
    expect(network.heads).toEqual([423]);
  });

  it('refuses a name with an unpaired surrogate with InvalidRequestError naming the field, by multipart and by tus alike', async () => {
    const other = await createAccount(t.app);
    const client = new FileStorage({ apiKey: other.apiKey, baseUrl: t.baseUrl, resumableThresholdBytes: 1024 });
    const small = await client.files.upload(Buffer.from('small'), { name: 'report\ud800.txt' }).catch((e) => e);
    const resumable = await client.files.upload(new Blob([randomBytes(4096)]), { name: '\udc00report.bin' }).catch((e) => e);
    for (const refused of [small, resumable]) {
      expect(refused).toBeInstanceOf(InvalidRequestError);
      expect(refused).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'name' }] } });
      expect(refused.message).toMatch(/name: must be well-formed Unicode/);
    }
    // Nothing was stored under a replacement character.
    expect((await client.files.list()).data).toEqual([]);
  });

  it('raises a ConnectionError, and leaves no partial file, when a download is cut off midway', async () => {
    const bytes = randomBytes(1024 * 1024);
    const file = await new FileStorage({ apiKey: account.apiKey, baseUrl: t.baseUrl }).files.upload(bytes, { name: 'cut.bin' });
    // A network failing mid-answer: the connection drops once 256 KiB of the download's body went through.
    const network = await startTestProxy({ upstream: t.baseUrl });
    network.cutAnswers(/^GET \/v1\/files\/[^/]+\/download\?/, { afterBodyBytes: 256 * 1024 });
    try {
      const client = new FileStorage({ apiKey: account.apiKey, baseUrl: network.url });
      const target = join(mkdtempSync(join(tmpdir(), 'fss-js-faults-')), 'cut.bin');
      const cut = await client.files.downloadTo(file.id, target).catch((e) => e);
      expect(cut).toBeInstanceOf(ConnectionError);
      expect(cut).toMatchObject({ code: 'connection_error', message: expect.stringMatching(/^The download of file_\w+ was cut off after \d+ bytes/) });
      expect(existsSync(target)).toBe(false);
      // Read as a stream, the same.
      const stream = await client.files.download(file.id);
      const read = await (async () => {
        for await (const _ of Readable.fromWeb(stream as import('node:stream/web').ReadableStream<Uint8Array>));
      })().catch((e) => e);
      expect(read).toBeInstanceOf(ConnectionError);
    } finally {
      await network.close();
    }
  });
});
