import type { INestApplicationContext } from '@nestjs/common';
import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { Redis } from 'ioredis';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyRecordKey } from '../../../src/common/idempotency/idempotency.interceptor.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { type ServerProcess, startServerProcess } from '../../support/processes.js';
import { OwnRedis } from '../../support/redis-server.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';

const MiB = 1024 * 1024;

/**
 * Redis restarted (a failover, a restart without persistence) while a POST with an Idempotency-Key runs: its lock and
 * its answer must survive, or the client's retry, sent exactly because something went wrong, would act a second time.
 * The request held is an upload whose body is still arriving; the server is a process of its own, as in production.
 */
describe('Idempotency-Key across a Redis restart', () => {
  let ownRedis: OwnRedis;
  let environment: TestEnvironment;
  let server: ServerProcess;
  let context: INestApplicationContext;
  let owner: TestAccount;
  let redis: Redis;
  let redisKeyPrefix: string;

  beforeAll(async () => {
    ownRedis = await OwnRedis.start();
    environment = await createTestEnvironment({ REDIS_URL: ownRedis.url });
    redisKeyPrefix = environment.env.REDIS_KEY_PREFIX;
    server = await startServerProcess(environment.env);
    context = await startOperatorContext(environment.env);
    owner = await createAccount(context);
    redis = new Redis(ownRedis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    redis.on('error', () => undefined);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop('SIGKILL');
    await context?.close();
    await environment?.dispose();
    await ownRedis?.dispose();
  });

  const withKey = (key: string) => ({ ...owner.auth, 'Idempotency-Key': key });
  const recordOf = async (key: string) => (await redis.get(idempotencyRecordKey(redisKeyPrefix, owner, key)).catch(() => null)) ?? '';

  interface Answer {
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: { data: { id: string }; error?: { code: string } };
  }

  /**
   * A multipart upload of `size` bytes, the same bytes every time for a name, so a retry is the same request. Sends all
   * but its last MiB, then holds (the request runs, the server free meanwhile) until `finish` sends the rest.
   */
  function heldUpload(key: string, name: string, size = 2 * MiB): { finish(): Promise<Answer> } {
    const { headers, head, content, tail } = multipart(key, name, size);
    const sent = httpRequest(`${server.baseUrl}/v1/files/upload`, { method: 'POST', headers });
    const answer = answerOf(sent);
    sent.write(head);
    sent.write(content.subarray(0, size - MiB));
    return {
      finish() {
        sent.end(Buffer.concat([content.subarray(size - MiB), tail]));
        return answer;
      },
    };
  }

  /** The same upload sent whole. */
  function wholeUpload(key: string, name: string, size = 2 * MiB): Promise<Answer> {
    const { headers, head, content, tail } = multipart(key, name, size);
    const sent = httpRequest(`${server.baseUrl}/v1/files/upload`, { method: 'POST', headers });
    const answer = answerOf(sent);
    sent.end(Buffer.concat([head, content, tail]));
    return answer;
  }

  function multipart(key: string, name: string, size: number) {
    const boundary = 'fss-redis-restart';
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const content = Buffer.alloc(size, name);
    const headers = { ...withKey(key), 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Content-Length': String(head.length + size + tail.length) };
    return { headers, head, content, tail };
  }

  function answerOf(sent: ClientRequest): Promise<Answer> {
    return new Promise((resolve, reject) => {
      let answered = false;
      sent.on('response', (res: IncomingMessage) => {
        answered = true;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }));
      });
      // An answer given before the whole body was read (409 in use) may reset the rest: the answer is what counts.
      sent.on('error', (error) => answered || reject(error));
    });
  }

  async function filesNamed(name: string): Promise<string[]> {
    const res = await request(server.baseUrl).get('/v1/files?per_page=100').set(owner.auth).expect(200);
    return res.body.data.filter((f: { name: string }) => f.name.startsWith(name.replace(/\.bin$/, ''))).map((f: { id: string }) => f.id);
  }

  it('takes the lock again when Redis lost it while the request ran: a retry meanwhile is told to wait, and afterwards is replayed', async () => {
    const key = 'upload-across-restart';
    const first = heldUpload(key, 'restart.bin');
    await eventually(async () => (await recordOf(key)).includes('"running"'), 30_000, 'the upload to hold the key');
    // Redis restarts and comes back empty while the upload still runs.
    await ownRedis.stop();
    await ownRedis.restart();
    await eventually(async () => (await recordOf(key)).includes('"running"'), 30_000, 'the running upload to hold its key again');
    const meanwhile = await wholeUpload(key, 'restart.bin');
    expect(meanwhile.status).toBe(409);
    expect(meanwhile.body.error?.code).toBe('idempotency_key_in_use');

    const answered = await first.finish();
    expect(answered.status).toBe(200);
    await eventually(async () => (await recordOf(key)).includes('"complete"'), 30_000, 'the answer to be stored');
    const retried = await wholeUpload(key, 'restart.bin');
    expect(retried.status).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.body.data.id).toBe(answered.body.data.id);
    expect(await filesNamed('restart.bin')).toEqual([answered.body.data.id]);
  });

  it('stores an answer given while Redis was down once Redis is back: the retry is replayed, not run again', async () => {
    const key = 'upload-answered-during-outage';
    const first = heldUpload(key, 'outage.bin');
    await eventually(async () => (await recordOf(key)).includes('"running"'), 30_000, 'the upload to hold the key');
    await ownRedis.stop();
    // Answered while Redis is away: the answer cannot be stored yet.
    const answered = await first.finish();
    expect(answered.status).toBe(200);
    await ownRedis.restart();
    await eventually(async () => (await recordOf(key)).includes('"complete"'), 30_000, 'the answer to be stored once Redis is back');
    const retried = await wholeUpload(key, 'outage.bin');
    expect(retried.status).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.body.data.id).toBe(answered.body.data.id);
    expect(await filesNamed('outage.bin')).toEqual([answered.body.data.id]);
  });
});
