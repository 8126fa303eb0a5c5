import type { INestApplicationContext } from '@nestjs/common';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MISSED_BEATS_BEFORE_DEAD } from '../../../src/infra/instances/instance-heartbeat.js';
import { ServerInstance } from '../../../src/infra/instances/server-instance.js';
import { WebhookDeliveryEntity } from '../../../src/modules/webhooks/webhook-delivery.entity.js';
import { createAccount } from '../../support/accounts.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { freePort, type ServerProcess, startServerProcess } from '../../support/processes.js';
import { OwnRedis } from '../../support/redis-server.js';
import { createTestEnvironment, startTestApp, type TestApp, type TestEnvironment } from '../../support/test-app.js';
import { uploadOk } from '../../support/uploads.js';
import { recordEvent, type ReceivedDelivery, startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import { eventually } from '../../support/time.js';

const uploaded = (i: number) => ({ file: { id: `file_${i}`, name: `f${i}.txt`, size: i, type: 'text/plain', folder_id: null, uploaded_by: 'usr_x', created_at: new Date().toISOString() } });

describe('webhook events survive a Redis outage', () => {
  let redis: OwnRedis;
  let t: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    redis = await OwnRedis.start();
    t = await startTestApp({ REDIS_URL: redis.url });
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
    await redis.dispose();
  });

  it('keeps events recorded while Redis is down in the database and delivers every one when it is back', async () => {
    const owner = await createAccount(t.app);
    await t.http().post('/v1/webhooks').set(owner.auth).send({ url: receiver.url, events: ['file.uploaded'] }).expect(201);
    await recordEvent(t.app, 'file.uploaded', owner.accountId, uploaded(0));
    await receiver.waitFor((r) => r.length === 1);

    // The receiver fails while Redis is down, so every event needs a retry, and retries need the queue.
    receiver.respondWith(() => 503);
    await redis.stop();
    for (let i = 1; i <= 5; i++) await recordEvent(t.app, 'file.uploaded', owner.accountId, uploaded(i));
    // The relay still turns the events into deliveries; a first attempt needs no queue, its retry waits, unqueued, in the database.
    const deliveries = t.app.get(DataSource).getRepository(WebhookDeliveryEntity);
    const waiting = () => deliveries.findBy({ status: 'pending' });
    await eventually(async () => (await waiting()).length === 5 && (await waiting()).every((d) => d.queuedAt === null), 20_000, 'five pending, unqueued deliveries');
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    // Each had its first attempt (no queue needed) and nothing more: its retry waits for Redis.
    expect((await waiting()).map((d) => [d.attempts, d.queuedAt])).toEqual(Array.from({ length: 5 }, () => [1, null]));

    receiver.respondWith(() => 200);
    const answeredOk = receiver.received.length;
    await redis.restart();
    const succeeded = (r: ReceivedDelivery[]) =>
      new Set([r[0], ...r.slice(answeredOk)].map((d) => (d.body.data.file as { id: string }).id));
    await receiver.waitFor((r) => succeeded(r).size === 6, 20_000, 'all six events');
    expect([...succeeded(receiver.received)].sort()).toEqual(['file_0', 'file_1', 'file_2', 'file_3', 'file_4', 'file_5']);
    await eventually(async () => (await deliveries.countBy({ status: 'succeeded' })) === 6, 20_000, 'six succeeded deliveries');
  }, 60_000);

  it('delivers file.uploaded for a file uploaded while Redis was down, once Redis is back', async () => {
    const owner = await createAccount(t.app);
    await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `${receiver.url}/uploads`, events: ['file.uploaded'] }).expect(201);
    await redis.stop();
    let file;
    try {
      file = await uploadOk(t, owner.auth, 'written during the outage', { name: 'outage.txt' });
    } finally {
      await redis.restart();
    }
    const forUploads = (r: ReceivedDelivery[]) => r.filter((d) => d.path === '/hooks/uploads');
    const [delivered] = forUploads(await receiver.waitFor((r) => forUploads(r).length > 0, 30_000, 'the file.uploaded delivery'));
    expect(delivered.body).toMatchObject({ event: 'file.uploaded', data: { file: { id: file.id, name: 'outage.txt', size: 'written during the outage'.length, uploaded_by: owner.userId } } });
  }, 45_000);

  it('answers a replay asked for while Redis is down at once with 503 and Retry-After, and replays once it is back', async () => {
    const owner = await createAccount(t.app);
    const since = new Date(Date.now() - 60_000).toISOString();
    await recordEvent(t.app, 'file.uploaded', owner.accountId, uploaded(7));
    await eventually(async () => (await t.app.get(DataSource).query('SELECT id FROM outbox_events WHERE relayed_at IS NULL')).length === 0, 20_000, 'the event relayed');
    const webhook = (await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `${receiver.url}/replayed`, events: ['file.uploaded'] }).expect(201)).body.data;
    const replay = () => t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(owner.auth).send({ since }).timeout(10_000);
    await redis.stop();
    try {
      const started = Date.now();
      const refused = await replay();
      expect([refused.status, refused.body.error?.code, refused.headers['retry-after']]).toEqual([503, 'service_unavailable', '5']);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await redis.restart();
    }
    await eventually(async () => ((await replay()).status === 202 ? true : undefined), 20_000, 'the replay accepted once Redis is back');
    const replayed = (r: ReceivedDelivery[]) => r.filter((d) => d.path === '/hooks/replayed');
    await receiver.waitFor((r) => replayed(r).length === 1, 20_000, 'the replayed event');
  }, 60_000);
});

describe('webhook events survive the server being killed mid-delivery', () => {
  const HEARTBEAT_MS = 1_000;
  // The dead process's missed heartbeats and the next check, BullMQ's stalled-job pick-up (about 15 s), the restart.
  const RECOVERY_MS = (MISSED_BEATS_BEFORE_DEAD + 1) * HEARTBEAT_MS + 30_000;
  let environment: TestEnvironment;
  let context: INestApplicationContext;
  let server: ServerProcess | null = null;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    environment = await createTestEnvironment({ WEBHOOK_DELIVERY_CONCURRENCY: '8', INSTANCE_HEARTBEAT_MS: String(HEARTBEAT_MS) });
    receiver = await startWebhookReceiver(() => ({ status: 200, delayMs: 300 }));
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await receiver.close();
    await context?.close();
    await environment.dispose();
  });

  it('delivers every event at least once and logs each delivery as succeeded at most once', async () => {
    const port = await freePort();
    server = await startServerProcess(environment.env, port);
    // The test writes events like another module would: in its own transactions, from a process without workers.
    context = await startOperatorContext(environment.env);
    const owner = await createAccount(context);
    await request(server.baseUrl).post('/v1/webhooks').set(owner.auth).send({ url: receiver.url, events: ['file.uploaded'] }).expect(201);

    const events = 24;
    for (let i = 0; i < events; i++) await recordEvent(context, 'file.uploaded', owner.accountId, uploaded(i));
    await receiver.waitFor((r) => r.length >= 4, 10_000, 'the first deliveries');
    await server.stop('SIGKILL');
    const receivedBeforeCrash = receiver.received.length;
    expect(receivedBeforeCrash).toBeLessThan(events);

    server = await startServerProcess(environment.env, port);
    const deliveries = context.get(DataSource).getRepository(WebhookDeliveryEntity);
    // The first attempts the killed process held (under way or waiting for a slot) are taken back by the new one once
    // the dead one has missed its heartbeats, whenever the kill came; the jobs it was running, once their locks expire.
    await eventually(
      async () => (await deliveries.countBy({ status: 'succeeded' })) === events,
      RECOVERY_MS,
      'every delivery to succeed',
    ).catch(async (error: Error) => {
      const unfinished = (await deliveries.find()).filter((d) => d.status !== 'succeeded');
      const states = unfinished.map((d) => ({ id: d.id, status: d.status, attempts: d.attempts, queuedAt: d.queuedAt, heldBy: d.heldBy, nextAttemptAt: d.nextAttemptAt }));
      throw new Error(`${error.message}; not succeeded: ${JSON.stringify(states)}`);
    });

    const all = await deliveries.find();
    expect(all).toHaveLength(events);
    const receivedIds = new Set(receiver.received.map((d) => d.headers['x-service-delivery-id']));
    for (const delivery of all) {
      expect(receivedIds.has(delivery.id)).toBe(true);
      const successes = delivery.attemptLog.filter((a) => a.response_status !== null && a.response_status < 300);
      expect(successes).toHaveLength(1);
    }
    const files = new Set(receiver.received.map((d) => (d.body.data.file as { id: string }).id));
    expect(files.size).toBe(events);
  }, RECOVERY_MS + 60_000);
});

describe('two server processes on one database', () => {
  let environment: TestEnvironment;
  let context: INestApplicationContext;
  const servers: ServerProcess[] = [];
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    environment = await createTestEnvironment();
    receiver = await startWebhookReceiver();
    servers.push(await startServerProcess(environment.env, await freePort()));
    servers.push(await startServerProcess(environment.env, await freePort()));
    context = await startOperatorContext(environment.env);
  });
  afterAll(async () => {
    for (const server of servers) await server.stop();
    await receiver.close();
    await context?.close();
    await environment.dispose();
  });

  it('relay and deliver each event exactly once between them', async () => {
    const owner = await createAccount(context);
    await request(servers[1].baseUrl).post('/v1/webhooks').set(owner.auth).send({ url: receiver.url, events: ['file.uploaded'] }).expect(201);
    const events = 60;
    for (let i = 0; i < events; i++) await recordEvent(context, 'file.uploaded', owner.accountId, uploaded(i));
    await receiver.waitFor((r) => r.length >= events, 15_000, `${events} deliveries`);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(receiver.received).toHaveLength(events);
    expect(new Set(receiver.received.map((d) => d.headers['x-service-delivery-id'])).size).toBe(events);
    expect(await context.get(DataSource).getRepository(WebhookDeliveryEntity).count()).toBe(events);
  });
});

describe('a server stopped gracefully in the middle of a burst', () => {
  let environment: TestEnvironment;
  let context: INestApplicationContext;
  const servers: ServerProcess[] = [];
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    environment = await createTestEnvironment({ WEBHOOK_DELIVERY_CONCURRENCY: '1', INSTANCE_HEARTBEAT_MS: '1000' });
    receiver = await startWebhookReceiver(() => ({ status: 200, delayMs: 500 }));
    servers.push(await startServerProcess(environment.env, await freePort()));
    servers.push(await startServerProcess(environment.env, await freePort()));
    context = await startOperatorContext(environment.env);
  });
  afterAll(async () => {
    for (const server of servers) await server.stop('SIGKILL');
    await receiver.close();
    await context?.close();
    await environment.dispose();
  });

  it('hands the first attempts still waiting to the queue, and the other server delivers each exactly once', async () => {
    const owner = await createAccount(context);
    await request(servers[0].baseUrl).post('/v1/webhooks').set(owner.auth).send({ url: receiver.url, events: ['file.uploaded'] }).expect(201);
    const events = 30;
    for (let i = 0; i < events; i++) await recordEvent(context, 'file.uploaded', owner.accountId, uploaded(i));
    await receiver.waitFor((r) => r.length >= 2, 10_000, 'the first deliveries');
    // One at a time per server, 0.5 s each: most of the burst is still waiting for a slot in the server it reached.
    await servers[0].stop('SIGTERM');
    // It stopped without working through what it handed over (its worker stops fetching first).
    expect(receiver.received.length).toBeLessThan(events);

    const deliveries = context.get(DataSource).getRepository(WebhookDeliveryEntity);
    // The other server delivers the rest, one at a time: its own, and those the stopped one handed over as jobs.
    await eventually(async () => (await deliveries.countBy({ status: 'succeeded' })) === events, 30_000, 'every delivery to succeed');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const ids = receiver.received.map((d) => d.headers['x-service-delivery-id']);
    expect(ids).toHaveLength(events);
    expect(new Set(ids).size).toBe(events);
    const rows = await deliveries.find();
    expect(rows.every((row) => row.heldBy === null && row.attempts === 1)).toBe(true);
  }, 60_000);
});

describe('a first attempt whose log was lost in a live server', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    t = await startTestApp({ INSTANCE_HEARTBEAT_MS: '1000' });
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  it('is attempted again once its row has been held a heartbeat by the server that no longer attempts it', async () => {
    const owner = await createAccount(t.app);
    await t.http().post('/v1/webhooks').set(owner.auth).send({ url: receiver.url, events: ['file.uploaded'] }).expect(201);
    await recordEvent(t.app, 'file.uploaded', owner.accountId, uploaded(0));
    const [first] = await receiver.waitFor((r) => r.length === 1, 10_000, 'the first attempt');
    const deliveries = t.app.get(DataSource).getRepository(WebhookDeliveryEntity);
    await eventually(async () => (await deliveries.findOneByOrFail({ id: String(first.headers['x-service-delivery-id']) })).status === 'succeeded', 10_000, 'the attempt logged');
    // The row as it is when the attempt went out but logging it failed (the database answered an error): pending, never
    // attempted, held by this live server, which holds nothing in memory for it any more. Neither the dead-process check
    // nor the stale check (it skips held rows) would ever give it back.
    const since = new Date(Date.now() - 60_000);
    await deliveries.update(
      { id: String(first.headers['x-service-delivery-id']) },
      { status: 'pending', attempts: 0, heldBy: t.app.get(ServerInstance).id, queuedAt: since, nextAttemptAt: since, lastAttemptAt: null, responseStatus: null },
    );
    const [again] = (await receiver.waitFor((r) => r.length === 2, 15_000, 'the attempt made again')).slice(1);
    expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(again.rawBody).toBe(first.rawBody);
    const row = await deliveries.findOneByOrFail({ id: String(first.headers['x-service-delivery-id']) });
    await eventually(async () => (await deliveries.findOneByOrFail({ id: row.id })).status === 'succeeded', 10_000, 'the new attempt logged');
    expect((await deliveries.findOneByOrFail({ id: row.id })).heldBy).toBeNull();
  }, 45_000);
});
