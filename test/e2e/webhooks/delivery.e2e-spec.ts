import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUES } from '../../../src/infra/queue/queue-names.js';
import { REDIS } from '../../../src/infra/redis/redis.module.js';
import { DeliveryQueuer } from '../../../src/modules/webhooks/delivery/delivery-queuer.js';
import { DeliveryReader } from '../../../src/modules/webhooks/delivery/delivery-reader.js';
import { RETRY_DELAYS_MS } from '../../../src/modules/webhooks/delivery/delivery-schedule.js';
import { DeliverySignal } from '../../../src/modules/webhooks/delivery/delivery-signal.js';
import { FirstAttempts } from '../../../src/modules/webhooks/delivery/first-attempts.js';
import { WebhookDeliveryEntity } from '../../../src/modules/webhooks/webhook-delivery.entity.js';
import { WebhookEntity } from '../../../src/modules/webhooks/webhook.entity.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import pg from 'pg';
import { Logger } from '@nestjs/common';
import { domainEvent } from '../../../src/infra/outbox/outbox.js';
import { startTestApp, TEST_DB, type TestApp } from '../../support/test-app.js';
import { recordEvent, type ReceivedDelivery, startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import { eventually } from '../../support/time.js';

const HOUR = 3600_000;

describe('webhook delivery', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let owner: TestAccount;

  beforeAll(async () => {
    t = await startTestApp();
    receiver = await startWebhookReceiver();
    owner = await createAccount(t.app);
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  async function createWebhook(account: TestAccount, path: string, body: Record<string, unknown>) {
    const created = await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}/${path}`, ...body }).expect(201);
    return created.body.data as { id: string; secret: string };
  }
  const at = (path: string) => (received: ReceivedDelivery[]) => received.filter((d) => d.path === `/hooks/${path}`);
  const deliveries = async (account: TestAccount, webhookId: string) =>
    (await t.http().get(`/v1/webhooks/${webhookId}/deliveries`).set(account.auth).expect(200)).body.data;

  it('sends a test event with every header, a header signature over the raw body and the in-body signature', async () => {
    const webhook = await createWebhook(owner, 'test-event', { events: ['file.uploaded'], secret: 'It\'s a Secret to Everybody' });
    const answer = await t.http().post(`/v1/webhooks/${webhook.id}/test`).set(owner.auth).expect(202);
    expect(answer.body.data).toEqual({
      id: expect.stringMatching(/^dlv_/),
      webhook_id: webhook.id,
      event: 'webhook.test',
      status: 'pending',
      attempts: 0,
      created_at: expect.any(String),
      last_attempt_at: null,
      next_attempt_at: expect.any(String),
      response_status: null,
      error: null,
      attempt_log: [],
    });
    const deliveryId = answer.body.data.id;

    const [got] = at('test-event')(await receiver.waitFor((r) => at('test-event')(r).length === 1));
    expect(got.method).toBe('POST');
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['x-service-event']).toBe('webhook.test');
    expect(got.headers['x-service-webhook-id']).toBe(webhook.id);
    expect(got.headers['x-service-delivery-id']).toBe(deliveryId);
    expect(got.headers['user-agent']).toBe('Service-Webhook/1.0');
    expect(got.headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    // A GitHub-style verifier checks the header against the raw body.
    expect(await verify(webhook.secret, got.rawBody, got.headers['x-service-signature'] as string)).toBe(true);
    expect(await verify('another secret', got.rawBody, got.headers['x-service-signature'] as string)).toBe(false);

    expect(Object.keys(got.body)).toEqual(['event', 'timestamp', 'webhook_id', 'data', 'signature']);
    expect(got.body).toMatchObject({ event: 'webhook.test', webhook_id: webhook.id, data: { message: expect.any(String) } });
    const { signature, ...inner } = got.body;
    expect(signature).toBe('sha256=' + createHmac('sha256', webhook.secret).update(JSON.stringify(inner)).digest('hex'));

    const [logged] = await eventually(async () => {
      const list = await deliveries(owner, webhook.id);
      return list[0]?.status === 'succeeded' ? list : undefined;
    });
    expect(logged).toMatchObject({ id: deliveryId, status: 'succeeded', attempts: 1, response_status: 200, error: null, next_attempt_at: null });
    expect(logged.attempt_log).toEqual([{ attempt: 1, started_at: expect.any(String), duration_ms: expect.any(Number), response_status: 200, error: null }]);
    expect(logged.last_attempt_at).toBe(logged.attempt_log[0].started_at);
    const one = await t.http().get(`/v1/webhooks/${webhook.id}/deliveries/${deliveryId}`).set(owner.auth).expect(200);
    expect(one.body.data).toEqual(logged);
  });

  it('delivers an outbox event once to each active subscribed webhook of its account, and nothing to the others', async () => {
    const other = await createAccount(t.app);
    const subscribed = await createWebhook(owner, 'subscribed', { events: ['folder.created', 'file.uploaded'] });
    const second = await createWebhook(owner, 'second', { events: ['file.uploaded'] });
    const unsubscribed = await createWebhook(owner, 'unsubscribed', { events: ['folder.created'] });
    const inactive = await createWebhook(owner, 'inactive', { events: ['file.uploaded'], active: false });
    const paused = await createWebhook(owner, 'paused', { events: ['file.uploaded'] });
    await t.http().patch(`/v1/webhooks/${paused.id}`).set(owner.auth).send({ active: false }).expect(200);
    await createWebhook(other, 'other-account', { events: ['file.uploaded'] });

    const occurredAt = new Date('2026-11-21T10:00:00.123Z');
    const data = { file: { id: 'file_1', name: 'report.pdf', size: 1024, type: 'application/pdf', folder_id: null, uploaded_by: owner.userId, created_at: occurredAt.toISOString() } };
    const eventId = await recordEvent(t.app, 'file.uploaded', owner.accountId, data, occurredAt);

    await receiver.waitFor((r) => at('subscribed')(r).length === 1 && at('second')(r).length === 1);
    const [got] = at('subscribed')(receiver.received);
    expect(got.body).toEqual({ event: 'file.uploaded', timestamp: '2026-11-21T10:00:00.123Z', webhook_id: subscribed.id, data, signature: expect.any(String) });
    expect(await verify(subscribed.secret, got.rawBody, got.headers['x-service-signature'] as string)).toBe(true);
    expect(at('second')(receiver.received)[0].headers['x-service-delivery-id']).not.toBe(got.headers['x-service-delivery-id']);

    // A second relay pass (or a second server) must not deliver the event again: waited past the relay's 1 s poll.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    for (const path of ['unsubscribed', 'inactive', 'paused', 'other-account']) expect(at(path)(receiver.received)).toHaveLength(0);
    expect(at('subscribed')(receiver.received)).toHaveLength(1);
    expect(await deliveries(owner, unsubscribed.id)).toEqual([]);
    expect(await deliveries(owner, inactive.id)).toEqual([]);
    expect(at('second')(receiver.received)).toHaveLength(1);
    const logs = await deliveries(owner, subscribed.id);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ event: 'file.uploaded', id: got.headers['x-service-delivery-id'] });
    expect(await deliveries(owner, second.id)).toHaveLength(1);
    const [row] = await t.app.get(DataSource).getRepository('OutboxEventEntity').findBy({ id: eventId });
    expect(row.relayedAt).toBeInstanceOf(Date);
  });

  // PostgreSQL only: there the relay's statement can be held between its read of the webhooks and its insert by a row
  // lock on the event. SQLite's write transactions take turns, so the same race is covered by the same statement.
  it('relays at once to the other webhooks, and nothing to a webhook deleted between the relay\'s read and its insert', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to hold the relay between its read and its insert; SQLite transactions take turns');
    const account = await createAccount(t.app);
    const deleted = await createWebhook(account, 'deleted-mid-relay', { events: ['folder.created'] });
    await createWebhook(account, 'kept-mid-relay', { events: ['folder.created'] });
    const warnings = vi.spyOn(Logger.prototype, 'warn');
    const holder = new pg.Client({ connectionString: t.environment.env.DATABASE_URL });
    await holder.connect();
    try {
      // Recorded without the commit signal, so the relay finds it at its next poll, after the row lock is taken.
      const event = domainEvent('folder.created', account.accountId, new Date(), { folder: { id: 'fld_midrelay' } });
      await holder.query('INSERT INTO outbox_events (id, account_id, event, payload, occurred_at) VALUES ($1, $2, $3, $4, $5)', [
        event.id, account.accountId, event.name, JSON.stringify(event.data), event.occurredAt.toISOString(),
      ]);
      await holder.query('BEGIN');
      const [locked] = (await holder.query('SELECT relayed_at FROM outbox_events WHERE id = $1 FOR UPDATE', [event.id])).rows;
      expect(locked.relayed_at).toBeNull();
      // The relay has read the event and the webhooks, and waits to claim the event.
      await eventually(
        async () => (await holder.query('SELECT pg_stat_clear_snapshot()')) && (await holder.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH claimed AS (UPDATE outbox_events%'`)).rows.length === 1,
        10_000,
        'the relay waiting to claim the event',
      );
      await t.http().delete(`/v1/webhooks/${deleted.id}`).set(account.auth).expect(200);
      warnings.mockClear();
      await holder.query('COMMIT');
      const released = Date.now();

      const [kept] = await receiver.waitFor((r) => at('kept-mid-relay')(r).length === 1, 10_000, 'the event at the kept webhook').then(at('kept-mid-relay'));
      expect(kept.headers['webhook-id']).toBe(event.id);
      // Not a failed relay pass, made again after its one-second pause.
      expect(warnings.mock.calls.map((call) => String(call[1]))).not.toContain('Could not relay webhook events; retrying');
      expect(kept.receivedAt - released).toBeLessThan(1000);
      const [{ count }] = (await holder.query('SELECT COUNT(*)::int AS count FROM webhook_deliveries WHERE webhook_id = $1', [deleted.id])).rows;
      expect(count).toBe(0);
      expect(at('deleted-mid-relay')(receiver.received)).toEqual([]);
    } finally {
      warnings.mockRestore();
      await holder.end();
    }
  });

  it('keeps delivering to other webhooks when one secret can no longer be decrypted', async () => {
    const unreadable = await createWebhook(owner, 'unreadable', { events: ['storage.warning'] });
    await createWebhook(owner, 'readable', { events: ['storage.warning'] });
    // As if SECRETS_ENCRYPTION_KEY had changed since this webhook was created.
    await t.app.get(DataSource).getRepository(WebhookEntity).update({ id: unreadable.id }, { secretSealed: 'v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA' });
    await recordEvent(t.app, 'storage.warning', owner.accountId, { storage: { used: 81, limit: 100, percentage: 81, threshold: '80%' } });
    await receiver.waitFor((r) => at('readable')(r).length === 1);
    expect(at('unreadable')(receiver.received)).toHaveLength(0);
    expect(await deliveries(owner, unreadable.id)).toEqual([]);
  });

  it('answers a test event or a replay to a webhook whose secret can no longer be decrypted with 409 naming the cause, and a rotation (without a grace period for the old secret) mends it', async () => {
    const unreadable = await createWebhook(owner, 'undecryptable', { events: ['storage.warning'] });
    await t.app.get(DataSource).getRepository(WebhookEntity).update({ id: unreadable.id }, { secretSealed: 'v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA' });
    await recordEvent(t.app, 'storage.warning', owner.accountId, { storage: { used: 91, limit: 100, percentage: 91, threshold: '90%' } }, new Date(Date.now() - 1000));

    const test = await t.http().post(`/v1/webhooks/${unreadable.id}/test`).set(owner.auth);
    expect([test.status, test.body.error?.code]).toEqual([409, 'conflict']);
    expect(test.body.error.message).toMatch(/secret of webhook .* cannot be decrypted.*rotate its secret/i);
    const replay = await t.http().post(`/v1/webhooks/${unreadable.id}/replay`).set(owner.auth).send({ since: new Date(Date.now() - 60_000).toISOString() });
    expect([replay.status, replay.body.error?.code]).toEqual([409, 'conflict']);
    expect(await deliveries(owner, unreadable.id)).toEqual([]);

    // A new secret, sealed with the current key: the webhook works again. The old one cannot sign, so it gets no grace period.
    const rotated = await t.http().post(`/v1/webhooks/${unreadable.id}/rotate-secret`).set(owner.auth).send({}).expect(200);
    expect(rotated.body.data.previous_secret_expires_at).toBeNull();
    expect((await t.http().get(`/v1/webhooks/${unreadable.id}`).set(owner.auth).expect(200)).body.data.previous_secret_expires_at).toBeNull();
    await t.http().post(`/v1/webhooks/${unreadable.id}/test`).set(owner.auth).expect(202);
    const [delivered] = await receiver.waitFor((r) => at('undecryptable')(r).length === 1, 10_000, 'the test event after the rotation').then(at('undecryptable'));
    expect(new Webhook(rotated.body.data.secret).verify(delivered.rawBody, delivered.headers as Record<string, string>)).toEqual(delivered.body);
  });

  it('answers a redelivery to a webhook whose secret can no longer be decrypted with 409 naming the cause, and leaves the delivery as it was', async () => {
    const webhook = await createWebhook(owner, 'redeliver-undecryptable', { events: ['storage.warning'] });
    const sent = (await t.http().post(`/v1/webhooks/${webhook.id}/test`).set(owner.auth).expect(202)).body.data;
    await receiver.waitFor((r) => at('redeliver-undecryptable')(r).length === 1, 10_000, 'the test event');
    const finished = await eventually(async () => {
      const current = (await t.http().get(`/v1/webhooks/${webhook.id}/deliveries/${sent.id}`).set(owner.auth).expect(200)).body.data;
      return current.status === 'succeeded' ? current : undefined;
    }, 10_000, 'the test event logged');
    await t.app.get(DataSource).getRepository(WebhookEntity).update({ id: webhook.id }, { secretSealed: 'v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA' });

    const redelivered = await t.http().post(`/v1/webhooks/${webhook.id}/deliveries/${sent.id}/redeliver`).set(owner.auth);
    expect([redelivered.status, redelivered.body.error?.code]).toEqual([409, 'conflict']);
    expect(redelivered.body.error.message).toMatch(/secret of webhook .* cannot be decrypted.*rotate its secret/i);
    expect((await t.http().get(`/v1/webhooks/${webhook.id}/deliveries/${sent.id}`).set(owner.auth).expect(200)).body.data).toEqual(finished);
  });

  it('does not use up a delivery\'s attempts on database errors: its job waits for the database and then delivers', async () => {
    const webhook = await createWebhook(owner, 'database-away', { events: ['file.deleted'] });
    const reader = t.app.get(DeliveryReader);
    // The delivery job cannot read its delivery three times in a row, as while the database fails over.
    const away = vi.spyOn(reader, 'read');
    for (let i = 0; i < 3; i++) away.mockRejectedValueOnce(new Error('Connection terminated unexpectedly'));
    try {
      // A test event's delivery goes through its queue job.
      const sent = (await t.http().post(`/v1/webhooks/${webhook.id}/test`).set(owner.auth).expect(202)).body.data;
      await receiver.waitFor((r) => at('database-away')(r).length === 1, 15_000, 'the delivery once the database is back');
      expect(away).toHaveBeenCalledTimes(4);
      const delivered = await eventually(async () => {
        const current = (await t.http().get(`/v1/webhooks/${webhook.id}/deliveries/${sent.id}`).set(owner.auth).expect(200)).body.data;
        return current.status === 'succeeded' ? current : undefined;
      }, 10_000, 'the delivery logged');
      expect(delivered.attempts).toBe(1);
    } finally {
      away.mockRestore();
    }
  });

  it('retries 5 s and then 25 s after failures with the same id and bytes, gives up after 3 attempts, and can redeliver', async () => {
    const flaky = await createWebhook(owner, 'flaky', { events: ['file.deleted'] });
    const broken = await createWebhook(owner, 'broken', { events: ['file.deleted'] });
    // The broken receiver takes a second to answer, so an attempt's end is well after its start.
    receiver.respondWith((d) =>
      d.path === '/hooks/broken' ? { status: 500, delayMs: 1000 } : d.path === '/hooks/flaky' && at('flaky')(receiver.received).length <= 2 ? 503 : 200,
    );
    await recordEvent(t.app, 'file.deleted', owner.accountId, { file: { id: 'file_2', name: 'old.txt', deleted_by: owner.userId, deleted_at: new Date().toISOString(), permanent: false } });

    // The schedule, exactly: after each failed attempt the job waits the configured delay (RETRY_DELAYS_MS,
    // 5 s then 25 s), counted from the end of that attempt, and the next attempt comes no earlier. The first
    // attempt is made straight after the relay, the others by the delivery's job.
    const queue = t.app.get<Queue>(getQueueToken(QUEUES.webhookDeliveries));
    const broken_ = (r: ReceivedDelivery[]) => at('broken')(r);
    for (const [step, delay] of RETRY_DELAYS_MS.entries()) {
      const attempt = broken_(await receiver.waitFor((r) => broken_(r)[step]?.answeredAt !== undefined, 40_000, `broken attempt ${step + 1}`))[step];
      const deliveryId = attempt.headers['x-service-delivery-id'];
      const retry = await eventually(async () => {
        const job = (await queue.getJobs(['delayed'])).find((j) => j.data.deliveryId === deliveryId);
        if (!job) return undefined;
        // BullMQ keeps a delayed job under its due time (in ms) times 0x1000.
        const score = Number(await (await queue.backend.client).zscore(queue.keys.delayed, job.id!));
        return { delay: job.delay, dueAt: Math.floor(score / 0x1000) };
      }, 20_000, `retry ${step + 1} to be scheduled`);
      expect(retry.delay).toBe(delay);
      expect(retry.dueAt - retry.delay).toBeGreaterThanOrEqual(attempt.answeredAt!);
      const next = broken_(await receiver.waitFor((r) => broken_(r).length >= step + 2, 40_000, `broken attempt ${step + 2}`))[step + 1];
      expect(next.receivedAt).toBeGreaterThanOrEqual(retry.dueAt);
    }
    await receiver.waitFor((r) => at('flaky')(r).length === 3, 40_000, 'three attempts at the flaky receiver');
    for (const path of ['flaky', 'broken']) {
      const attempts = at(path)(receiver.received);
      expect(new Set(attempts.map((a) => a.headers['x-service-delivery-id'])).size).toBe(1);
      expect(new Set(attempts.map((a) => a.rawBody)).size).toBe(1);
      expect(new Set(attempts.map((a) => a.headers['x-service-signature'])).size).toBe(1);
    }

    const [flakyLog] = await eventually(async () => {
      const list = await deliveries(owner, flaky.id);
      return list[0]?.status === 'succeeded' ? list : undefined;
    });
    expect(flakyLog).toMatchObject({ attempts: 3, response_status: 200, error: null, next_attempt_at: null });
    expect(flakyLog.attempt_log.map((a: { attempt: number; response_status: number }) => [a.attempt, a.response_status])).toEqual([
      [1, 503],
      [2, 503],
      [3, 200],
    ]);
    const [brokenLog] = await eventually(async () => {
      const list = await deliveries(owner, broken.id);
      return list[0]?.status === 'failed' ? list : undefined;
    });
    expect(brokenLog).toMatchObject({ attempts: 3, response_status: 500, error: 'receiver answered 500', next_attempt_at: null });
    expect(brokenLog.attempt_log).toHaveLength(3);
    // Given up for good: no fourth attempt is scheduled (however late it would come), and none was made.
    expect((await queue.getJobs(['delayed', 'waiting'])).filter((job) => job.data.deliveryId === brokenLog.id)).toEqual([]);
    expect(at('broken')(receiver.received)).toHaveLength(3);

    // Redelivery: a new series under the same delivery id with the same bytes.
    receiver.respondWith(() => 200);
    const redelivered = await t.http().post(`/v1/webhooks/${broken.id}/deliveries/${brokenLog.id}/redeliver`).set(owner.auth).expect(202);
    expect(redelivered.body.data).toMatchObject({ id: brokenLog.id, status: 'pending', attempts: 3 });
    await receiver.waitFor((r) => at('broken')(r).length === 4);
    const fourth = at('broken')(receiver.received)[3];
    expect(fourth.headers['x-service-delivery-id']).toBe(brokenLog.id);
    expect(fourth.rawBody).toBe(at('broken')(receiver.received)[0].rawBody);
    const [afterRedelivery] = await eventually(async () => {
      const list = await deliveries(owner, broken.id);
      return list[0]?.status === 'succeeded' ? list : undefined;
    });
    expect(afterRedelivery).toMatchObject({ attempts: 4, response_status: 200 });
    expect(afterRedelivery.attempt_log.map((a: { attempt: number }) => a.attempt)).toEqual([1, 2, 3, 4]);
    const again = await t.http().post(`/v1/webhooks/${broken.id}/deliveries/nonexistent/redeliver`).set(owner.auth).expect(404);
    expect(again.body.error.code).toBe('not_found');
  }, 60_000);

  it('gives a redelivery whose queue job Redis lost three attempts in all when the safety net queues it again', async () => {
    const hook = await createWebhook(owner, 'lost-job', { events: ['file.deleted'] });
    const mine = () => at('lost-job')(receiver.received);
    receiver.respondWith(() => 200);
    const delivery = (await t.http().post(`/v1/webhooks/${hook.id}/test`).set(owner.auth).expect(202)).body.data;
    await eventually(async () => (await deliveries(owner, hook.id))[0]?.status === 'succeeded', 20_000, 'the first series to succeed');

    // Redelivered to a receiver that now fails: the series' first attempt (attempt 2) fails, and its job waits 5 s.
    receiver.respondWith((d) => (d.path === '/hooks/lost-job' ? 500 : 200));
    await t.http().post(`/v1/webhooks/${hook.id}/deliveries/${delivery.id}/redeliver`).set(owner.auth).expect(202);
    const queue = t.app.get<Queue>(getQueueToken(QUEUES.webhookDeliveries));
    await eventually(async () => (await queue.getJobs(['delayed'])).some((job) => job.data.deliveryId === delivery.id), 20_000, 'the retry job');
    expect(mine()).toHaveLength(2);

    // Redis loses the queue (a restart without persistence), and the delivery is left pending: two minutes later
    // the safety net queues it again. The two minutes are taken off its due time rather than waited for.
    const redis = t.app.get<Redis>(REDIS);
    const lost = await redis.keys(`${queue.qualifiedName}:*`);
    expect(lost.length).toBeGreaterThan(0);
    await redis.del(...lost);
    await t.app.get(DataSource).getRepository(WebhookDeliveryEntity).update({ id: delivery.id }, { nextAttemptAt: new Date(Date.now() - 3 * 60_000) });
    expect(await t.app.get(DeliveryQueuer).requeueStale()).toBe(1);
    t.app.get(DeliverySignal).nudge();

    // The series goes on with its second and third attempts (3 and 4), then gives up: not three more. Their waits
    // (5 s, then 25 s) are taken off their due times, as the two minutes above: the schedule has its own test.
    const rows = t.app.get(DataSource).getRepository(WebhookDeliveryEntity);
    const [failed] = await eventually(async () => {
      for (const job of await queue.getJobs(['delayed'])) {
        if (job.data.deliveryId !== delivery.id) continue;
        await rows.update({ id: delivery.id, status: 'pending' }, { nextAttemptAt: new Date() });
        await job.promote().catch(() => undefined);
      }
      const list = await deliveries(owner, hook.id);
      return list[0]?.status === 'failed' ? list : undefined;
    }, 50_000, 'the redelivery to fail');
    expect(failed).toMatchObject({ attempts: 4, next_attempt_at: null });
    expect(failed.attempt_log.map((a: { attempt: number; response_status: number }) => [a.attempt, a.response_status])).toEqual([
      [1, 200],
      [2, 500],
      [3, 500],
      [4, 500],
    ]);
    expect(mine()).toHaveLength(4);
  }, 90_000);

  it('turns off a webhook whose deliveries have all failed for 24 hours, and says so', async () => {
    const failing = await createWebhook(owner, 'failing-a-day', { events: ['file.uploaded'] });
    const failingLess = await createWebhook(owner, 'failing-23h', { events: ['file.uploaded'] });
    const webhooks = t.app.get(DataSource).getRepository(WebhookEntity);
    await webhooks.update({ id: failing.id }, { failingSince: new Date(Date.now() - 25 * HOUR) });
    await webhooks.update({ id: failingLess.id }, { failingSince: new Date(Date.now() - 23 * HOUR) });
    receiver.respondWith((d) => (d.path.startsWith('/hooks/failing') ? 500 : 200));

    await t.http().post(`/v1/webhooks/${failing.id}/test`).set(owner.auth).expect(202);
    await t.http().post(`/v1/webhooks/${failingLess.id}/test`).set(owner.auth).expect(202);
    const turnedOff = await eventually(async () => {
      const found = (await t.http().get(`/v1/webhooks/${failing.id}`).set(owner.auth).expect(200)).body.data;
      return found.active === false ? found : undefined;
    });
    expect(turnedOff).toMatchObject({ active: false, disabled_reason: 'deliveries_failing', disabled_at: expect.any(String) });
    await eventually(async () => (await deliveries(owner, failingLess.id))[0]?.attempts === 1);
    expect((await t.http().get(`/v1/webhooks/${failingLess.id}`).set(owner.auth).expect(200)).body.data).toMatchObject({ active: true, disabled_reason: null });

    // Switching it back on forgives the streak.
    receiver.respondWith(() => 200);
    const revived = await t.http().patch(`/v1/webhooks/${failing.id}`).set(owner.auth).send({ active: true }).expect(200);
    expect(revived.body.data).toMatchObject({ active: true, disabled_reason: null, disabled_at: null });
    expect((await webhooks.findOneByOrFail({ id: failing.id })).failingSince).toBeNull();

    // A success ends a failure streak.
    await t.http().post(`/v1/webhooks/${failingLess.id}/test`).set(owner.auth).expect(202);
    await eventually(async () => ((await webhooks.findOneByOrFail({ id: failingLess.id })).failingSince === null ? true : undefined));
  });

  it('does not forgive the failures of a webhook that is on already: a PATCH repeating active: true keeps its streak', async () => {
    const webhook = await createWebhook(owner, 'failing-repatched', { events: ['file.uploaded'] });
    const webhooks = t.app.get(DataSource).getRepository(WebhookEntity);
    await webhooks.update({ id: webhook.id }, { failingSince: new Date(Date.now() - 25 * HOUR) });
    receiver.respondWith((d) => (d.path === '/hooks/failing-repatched' ? 500 : 200));

    // As a declarative tool sends the whole desired state: nothing is switched on, so nothing is forgiven.
    await t.http().patch(`/v1/webhooks/${webhook.id}`).set(owner.auth).send({ events: ['file.uploaded', 'file.deleted'], active: true }).expect(200);
    const sent = (await t.http().post(`/v1/webhooks/${webhook.id}/test`).set(owner.auth).expect(202)).body.data;
    await eventually(async () => (await t.http().get(`/v1/webhooks/${webhook.id}/deliveries/${sent.id}`).set(owner.auth).expect(200)).body.data.attempts === 1, 10_000, 'the failed attempt logged');
    expect((await t.http().get(`/v1/webhooks/${webhook.id}`).set(owner.auth).expect(200)).body.data).toMatchObject({ active: false, disabled_reason: 'deliveries_failing' });
    receiver.respondWith(() => 200);
  });
});

describe('webhook delivery with a slow receiver', () => {
  let t: TestApp;
  let slow: WebhookReceiver;
  let fast: WebhookReceiver;

  beforeAll(async () => {
    t = await startTestApp({ WEBHOOK_DELIVERY_CONCURRENCY: '2' });
    // Never answers within the sender's 30 s timeout: a delivery to it holds its slot for all of that time.
    slow = await startWebhookReceiver(() => ({ status: 200, delayMs: 60_000 }));
    fast = await startWebhookReceiver();
  });
  afterAll(async () => {
    await slow.close();
    await fast.close();
    await t.close();
  });

  it('keeps delivering to other receivers while one is slow', async () => {
    const owner = await createAccount(t.app);
    await t.http().post('/v1/webhooks').set(owner.auth).send({ url: slow.url, events: ['folder.created'] }).expect(201);
    await t.http().post('/v1/webhooks').set(owner.auth).send({ url: fast.url, events: ['folder.created'] }).expect(201);
    for (let i = 0; i < 6; i++) {
      await recordEvent(t.app, 'folder.created', owner.accountId, { folder: { id: `fld_${i}`, name: `F${i}`, parent_id: null, created_by: owner.userId } });
    }
    // All six arrive while the slow receiver has not answered even once: had they queued behind it, none
    // could arrive before its first attempt timed out (30 s, longer than this wait).
    await fast.waitFor((r) => r.length === 6, 25_000, 'all six deliveries at the fast receiver');
    expect(slow.received.length).toBeGreaterThanOrEqual(1);
    expect(slow.received.length).toBeLessThan(6);
  });
});

describe('first attempts of a webhook while two slow receivers have a backlog', () => {
  let t: TestApp;
  let server: Server;
  /** Every request in the order it arrived; each is answered 200 only when the test says so. */
  const arrivals: Array<{ path: string; answer: () => void }> = [];
  const arrivedAt = (path: string) => arrivals.filter((arrival) => arrival.path === path).length;

  beforeAll(async () => {
    // Four slots, three of them for one webhook at most.
    t = await startTestApp({ WEBHOOK_DELIVERY_CONCURRENCY: '4' });
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => arrivals.push({ path: request.url ?? '', answer: () => response.end() }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const arrival of arrivals) arrival.answer();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await t.close();
  });

  it('get the first slot that comes free, rather than waiting behind their backlogs', async () => {
    const owner = await createAccount(t.app);
    const { port } = server.address() as AddressInfo;
    const subscribe = (path: string, event: string) => t.http().post('/v1/webhooks').set(owner.auth).send({ url: `http://127.0.0.1:${port}${path}`, events: [event] }).expect(201);
    await subscribe('/slow-a', 'folder.created');
    await subscribe('/slow-b', 'file.deleted');
    const healthy = (await subscribe('/healthy', 'file.uploaded')).body.data as { id: string };
    for (let i = 0; i < 5; i++) await recordEvent(t.app, 'folder.created', owner.accountId, { folder: { id: `fld_${i}` } });
    await eventually(async () => arrivedAt('/slow-a') === 3, 10_000, 'slow-a holding its three slots');
    for (let i = 0; i < 5; i++) await recordEvent(t.app, 'file.deleted', owner.accountId, { file: { id: `file_${i}` } });
    await eventually(async () => arrivedAt('/slow-b') === 1, 10_000, 'slow-b holding the fourth slot');
    await recordEvent(t.app, 'file.uploaded', owner.accountId, { file: { id: 'file_healthy' } });
    await eventually(async () => {
      const [delivery] = await t.app.get(DataSource).getRepository(WebhookDeliveryEntity).findBy({ webhookId: healthy.id });
      return delivery && t.app.get(FirstAttempts).isAttempting(delivery.id);
    }, 10_000, 'the healthy webhook\'s delivery waiting in the server for a slot');
    // Every slot is taken; slow-a and slow-b each have deliveries waiting for one, and so has the healthy webhook.
    const before = arrivals.length;
    arrivals[0].answer();
    await eventually(async () => arrivals.length > before, 10_000, 'the freed slot used');
    expect(arrivals[before].path).toBe('/healthy');
  });
});

describe('a receiver whose answer has a status but a body that does not end', () => {
  let t: TestApp;
  let owner: TestAccount;
  let server: Server;
  const requests: string[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createAccount(t.app);
    // Answers 200 at once, then streams its body for ever (or a very large one over a slow link).
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        requests.push(String(request.headers['x-service-delivery-id']));
        response.writeHead(200, { 'Content-Type': 'text/plain' });
        const trickle = setInterval(() => response.write('.'), 100);
        response.on('close', () => clearInterval(trickle));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await t.close();
  });

  it('has succeeded at its status line: one attempt, logged with the 200, not a timeout followed by retries', async () => {
    const { port } = server.address() as AddressInfo;
    const webhook = (await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `http://127.0.0.1:${port}/endless`, events: ['file.uploaded'] }).expect(201)).body.data;
    const sent = (await t.http().post(`/v1/webhooks/${webhook.id}/test`).set(owner.auth).expect(202)).body.data;
    const delivery = await eventually(async () => {
      const current = (await t.http().get(`/v1/webhooks/${webhook.id}/deliveries/${sent.id}`).set(owner.auth).expect(200)).body.data;
      return current.status === 'pending' ? undefined : current;
    }, 10_000, 'the delivery settled');
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 1, response_status: 200, error: null });
    expect(delivery.attempt_log[0].duration_ms).toBeLessThan(5_000);
    expect(requests).toEqual([sent.id]);
  });
});

describe('first attempts waiting for a slot of a slow receiver', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    // Two slots, one of them for one webhook: while a delivery is in flight, the next ones wait in the process.
    t = await startTestApp({ WEBHOOK_DELIVERY_CONCURRENCY: '2' });
    receiver = await startWebhookReceiver(() => ({ status: 200, delayMs: 1_500 }));
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  const at = (path: string) => (received: ReceivedDelivery[]) => received.filter((d) => d.path === `/hooks/${path}`);
  async function threeEventsOneInFlight(owner: TestAccount, path: string) {
    const created = await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `${receiver.url}/${path}`, events: ['folder.created'] }).expect(201);
    for (let i = 0; i < 3; i++) {
      await recordEvent(t.app, 'folder.created', owner.accountId, { folder: { id: `fld_${path}${i}`, name: `F${i}`, parent_id: null, created_by: owner.userId } });
    }
    await receiver.waitFor((r) => at(path)(r).length === 1, 10_000, `the first delivery at ${path}`);
    return created.body.data as { id: string; secret: string };
  }

  it('sends nothing more once the webhook is deleted', async () => {
    const owner = await createAccount(t.app);
    const webhook = await threeEventsOneInFlight(owner, 'deleted');
    await t.http().delete(`/v1/webhooks/${webhook.id}`).set(owner.auth).expect(200);
    // The attempt under way is answered after 1.5 s; the two that waited behind it would follow within 3 s more.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(at('deleted')(receiver.received)).toHaveLength(1);
  });

  it('signs what waited with the secret as it is when the attempt starts: a leaked secret rotated out at once signs nothing more', async () => {
    const owner = await createAccount(t.app);
    const webhook = await threeEventsOneInFlight(owner, 'rotated');
    const rotated = await t.http().post(`/v1/webhooks/${webhook.id}/rotate-secret`).set(owner.auth).send({ expires_in: 0 }).expect(200);
    const fresh: string = rotated.body.data.secret;
    const [, ...waited] = await receiver.waitFor((r) => at('rotated')(r).length === 3, 10_000, 'the two deliveries that waited').then(at('rotated'));
    for (const delivery of waited) {
      expect(delivery.headers['x-service-signature']).toBe('sha256=' + createHmac('sha256', fresh).update(delivery.rawBody).digest('hex'));
      expect(String(delivery.headers['webhook-signature']).split(' ')).toHaveLength(1);
      expect(new Webhook(fresh).verify(delivery.rawBody, delivery.headers as Record<string, string>)).toEqual(delivery.body);
    }
  });
});

describe('a burst of events larger than the delivery slots', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    // Four slots, three of them for one webhook: most of the burst has to wait for a slot.
    t = await startTestApp({ WEBHOOK_DELIVERY_CONCURRENCY: '4' });
    receiver = await startWebhookReceiver(() => ({ status: 200, delayMs: 40 }));
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  it('delivers every event once, in turn, without a queue job per delivery', async () => {
    const owner = await createAccount(t.app);
    await t.http().post('/v1/webhooks').set(owner.auth).send({ url: receiver.url, events: ['folder.created'] }).expect(201);
    const events = 60;
    await Promise.all(
      Array.from({ length: events }, (_, i) =>
        recordEvent(t.app, 'folder.created', owner.accountId, { folder: { id: `fld_${i}`, name: `F${i}`, parent_id: null, created_by: owner.userId } }),
      ),
    );
    const received = await receiver.waitFor((r) => r.length >= events, 30_000, 'every delivery');
    expect(new Set(received.map((d) => (d.body.data.folder as { id: string }).id)).size).toBe(events);
    // Every attempt is logged a moment after its receiver answered: once, and as the first.
    const logged = await eventually(async () => {
      const rows: Array<{ status: string; attempts: number; held_by: string | null }> = await t.app.get(DataSource).query(`SELECT status, attempts, held_by FROM webhook_deliveries`);
      return rows.every((row) => row.status === 'succeeded') ? rows : undefined;
    }, 10_000, 'every attempt to be logged');
    expect(logged).toHaveLength(events);
    expect(logged.every((row) => Number(row.attempts) === 1 && row.held_by === null)).toBe(true);
    // The first attempts waited in the server for a slot rather than in the queue: the queue holds no job for them,
    // and none ran.
    const queue = t.app.get<Queue>(getQueueToken(QUEUES.webhookDeliveries));
    expect(await queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed')).toEqual({ waiting: 0, active: 0, delayed: 0, completed: 0, failed: 0 });
    expect(receiver.received).toHaveLength(events);
  });
});
