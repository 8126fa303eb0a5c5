import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { idempotencyRecordKey } from '../../../src/common/idempotency/idempotency.interceptor.js';
import { REDIS } from '../../../src/infra/redis/redis.module.js';
import { createAccount, type TestAccount } from '../../../test/support/accounts.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { eventually, sleep } from '../../../test/support/time.js';
import { ConflictError, FileStorage } from '../src/index.js';

const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');

describe('the JavaScript client through server-side races and a faulty network', () => {
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
      await eventually(async () => (await redis.exists(idempotencyRecordKey(t.config.redisKeyPrefix, account.accountId, key))) === 1, 10_000, 'the first attempt holding its key');

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
});
