import { DataSource, IsNull } from 'typeorm';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Transactions } from '../../../src/infra/database/transactions.js';
import { QUEUES } from '../../../src/infra/queue/queue-names.js';
import { OutboxEventEntity } from '../../../src/infra/outbox/outbox-event.entity.js';
import { domainEvent, Outbox } from '../../../src/infra/outbox/outbox.js';
import { WebhookDeliveryRepository } from '../../../src/modules/webhooks/delivery/webhook-delivery.repository.js';
import { WebhookDeliveryEntity } from '../../../src/modules/webhooks/webhook-delivery.entity.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import type { TestApp } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { recordEvent, startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const uploaded = (i: number) => ({ file: { id: `file_${i}`, name: `f${i}.txt`, size: i, type: 'text/plain', folder_id: null, uploaded_by: 'usr_x', created_at: new Date().toISOString() } });
const fileIdOf = (body: { data: Record<string, unknown> }) => (body.data.file as { id: string }).id;

/**
 * Waits until the relay has passed over the account's recorded events. A webhook created before then would
 * also get them as ordinary deliveries (the relay matches the webhooks that exist when it runs), which is not
 * what these tests set up: history from before the webhook existed.
 */
async function relayed(t: TestApp, accountId: string): Promise<void> {
  const outbox = t.app.get(DataSource).getRepository(OutboxEventEntity);
  await eventually(async () => (await outbox.countBy({ accountId, relayedAt: IsNull() })) === 0, 60_000, 'the recorded events relayed');
}

describe('webhook replay: POST /v1/webhooks/{id}/replay', () => {
  let t: TestApp;
  let owner: TestAccount;
  useTestApp((started) => ({ t, owner } = started));
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  it('delivers every retained event of the window that the webhook subscribes to again, with new delivery ids and the same event ids; twice while pending queues nothing new', async () => {
    const account = await createAccount(t.app);
    const since = new Date(Date.now() - 60_000);
    // Recorded before the webhook existed: they were never delivered to it.
    const ids = [];
    for (let i = 1; i <= 3; i++) ids.push(await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(i), new Date(since.getTime() + i * 1000)));
    await recordEvent(t.app, 'folder.created', account.accountId, { folder: { id: 'fld_1' } }, new Date(since.getTime() + 4000));
    const outside = await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(9), new Date(since.getTime() - 1000));
    await relayed(t, account.accountId);
    const path = `/replay-${account.accountId}`;
    const webhook = (await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}${path}`, events: ['file.uploaded'] }).expect(201)).body.data;
    const mine = () => receiver.received.filter((d) => d.path === `/hooks${path}`);
    // Held answers keep the replayed deliveries pending while the same window is replayed again.
    receiver.respondWith(() => ({ status: 200, delayMs: 1500 }));

    const first = await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: since.toISOString() }).expect(202);
    expect(first.body.data).toEqual({ queued: 3 });
    const again = await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: since.toISOString() }).expect(202);
    expect(again.body.data).toEqual({ queued: 0 });

    const delivered = await receiver.waitFor(() => mine().length >= 3, 30_000, 'three replayed deliveries');
    expect(delivered.filter((d) => d.path === `/hooks${path}`).map((d) => fileIdOf(d.body)).sort()).toEqual(['file_1', 'file_2', 'file_3']);
    const deliveries = t.app.get(DataSource).getRepository(WebhookDeliveryEntity);
    await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, status: 'succeeded' })) === 3, 30_000, 'three succeeded');
    const rows = await deliveries.findBy({ webhookId: webhook.id });
    expect(rows.map((r) => r.eventId).sort()).toEqual([...ids].sort());
    expect(rows.every((r) => r.origin === 'replay')).toBe(true);
    expect(rows.map((r) => r.eventId)).not.toContain(outside);
    // Listed in the delivery log with the usual attempt record.
    const log = (await t.http().get(`/v1/webhooks/${webhook.id}/deliveries`).set(account.auth).expect(200)).body.data;
    expect(log).toHaveLength(3);
    expect(log.every((d: { attempts: number; attempt_log: unknown[] }) => d.attempts === 1 && d.attempt_log.length === 1)).toBe(true);

    // Once those finished, the same window replays again: new delivery ids for the same events.
    receiver.respondWith(() => 200);
    const third = await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: since.toISOString() }).expect(202);
    expect(third.body.data).toEqual({ queued: 3 });
    await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, status: 'succeeded' })) === 6, 30_000, 'six succeeded');
    const all = await deliveries.findBy({ webhookId: webhook.id });
    expect(new Set(all.map((r) => r.id)).size).toBe(6);
    expect(new Set(all.map((r) => r.eventId)).size).toBe(3);
  }, 60_000);

  it('answers concurrent replays of the same window with one count between them: the others queued nothing', async () => {
    const account = await createAccount(t.app);
    const since = new Date(Date.now() - 60_000);
    for (let i = 1; i <= 4; i++) await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(i), new Date(since.getTime() + i * 1000));
    await relayed(t, account.accountId);
    const webhook = (await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}/concurrent-${account.accountId}`, events: ['file.uploaded'] }).expect(201)).body.data;
    // The job waits until every request has been answered, as it would behind other replays.
    const replays = t.app.get<Queue>(getQueueToken(QUEUES.webhookReplays));
    await replays.pause();
    try {
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: since.toISOString() }).expect(202)),
      );
      const counts = answers.map((answer) => answer.body.data.queued as number);
      expect(counts.reduce((sum, n) => sum + n, 0), JSON.stringify(counts)).toBe(4);
    } finally {
      await replays.resume();
    }
    const deliveries = t.app.get(DataSource).getRepository(WebhookDeliveryEntity);
    await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, status: 'succeeded' })) === 4, 30_000, 'four succeeded');
    expect(await deliveries.countBy({ webhookId: webhook.id })).toBe(4);
  });

  it('replays an open window again while its job is pending: the events since that request are queued, once, the rest not again', async () => {
    const account = await createAccount(t.app);
    const since = new Date(Date.now() - 60_000);
    const ids = [];
    for (let i = 1; i <= 2; i++) ids.push(await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(i), new Date(since.getTime() + i * 1000)));
    await relayed(t, account.accountId);
    const webhook = (await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}/open-again-${account.accountId}`, events: ['file.uploaded'] }).expect(201)).body.data;
    // The first replay's job stays pending (as behind other replays, or a receiver that is down) while the window is asked again.
    const replays = t.app.get<Queue>(getQueueToken(QUEUES.webhookReplays));
    await replays.pause();
    try {
      const replay = async () => (await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: since.toISOString() }).expect(202)).body.data;
      expect(await replay()).toEqual({ queued: 2 });
      await new Promise((resolve) => setTimeout(resolve, 5));
      // Happened after the first request: its job does not cover it.
      ids.push(await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(3), new Date()));
      expect(await replay()).toEqual({ queued: 1 });
      // Asked again (a retry): nothing new.
      expect(await replay()).toEqual({ queued: 0 });
    } finally {
      await replays.resume();
    }
    const deliveries = t.app.get(DataSource).getRepository(WebhookDeliveryEntity);
    await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, origin: 'replay', status: 'succeeded' })) === 3, 30_000, 'three replayed');
    const replayed = await deliveries.findBy({ webhookId: webhook.id, origin: 'replay' });
    expect(replayed.map((r) => r.eventId).sort()).toEqual([...ids].sort());
  });

  it('refuses to redeliver a finished replay delivery while a newer replay of its event to the webhook is pending, and redelivers it after', async () => {
    const account = await createAccount(t.app);
    const since = new Date(Date.now() - 60_000);
    await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(1), new Date(since.getTime() + 1000));
    await relayed(t, account.accountId);
    const path = `/redeliver-${account.accountId}`;
    const webhook = (await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}${path}`, events: ['file.uploaded'] }).expect(201)).body.data;
    const mine = () => receiver.received.filter((d) => d.path === `/hooks${path}`);
    const deliveries = t.app.get(DataSource).getRepository(WebhookDeliveryEntity);
    const replay = () => t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: since.toISOString() }).expect(202);
    const redeliver = (id: string) => t.http().post(`/v1/webhooks/${webhook.id}/deliveries/${id}/redeliver`).set(account.auth);

    expect((await replay()).body.data).toEqual({ queued: 1 });
    await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, status: 'succeeded' })) === 1, 30_000, 'the first replay delivered');
    const [first] = await deliveries.findBy({ webhookId: webhook.id });

    // The second replay of the event fails its first attempt and waits 5 s for its retry.
    let failing = true;
    receiver.respondWith((d) => (d.path === `/hooks${path}` && failing ? 500 : 200));
    expect((await replay()).body.data).toEqual({ queued: 1 });
    await receiver.waitFor(() => mine().length === 2, 30_000, 'the second replay attempted');
    const refused = await redeliver(first.id).expect(409);
    expect(refused.body.error).toMatchObject({ code: 'conflict', message: expect.stringContaining('replay') });
    expect((await t.http().get(`/v1/webhooks/${webhook.id}/deliveries/${first.id}`).set(account.auth).expect(200)).body.data).toMatchObject({ status: 'succeeded', attempts: 1 });

    failing = false;
    await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, status: 'succeeded' })) === 2, 30_000, 'the second replay delivered on its retry');
    expect((await redeliver(first.id).expect(202)).body.data).toMatchObject({ id: first.id, status: 'pending' });
    await receiver.waitFor(() => mine().filter((d) => d.headers['x-service-delivery-id'] === first.id).length === 2, 30_000, 'the redelivery');
  }, 60_000);

  it('sends an inactive webhook nothing: replay and redeliver answer 409 saying to activate it, a replay job finding it switched off makes no deliveries, and once active again both work', async () => {
    const account = await createAccount(t.app);
    const since = new Date(Date.now() - 60_000);
    await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(1), new Date(since.getTime() + 1000));
    await relayed(t, account.accountId);
    const path = `/inactive-${account.accountId}`;
    const webhook = (await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}${path}`, events: ['file.uploaded'] }).expect(201)).body.data;
    const mine = () => receiver.received.filter((d) => d.path === `/hooks${path}`);
    const deliveries = t.app.get(DataSource).getRepository(WebhookDeliveryEntity);
    const replay = () => t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: since.toISOString() });
    const setActive = (active: boolean) => t.http().patch(`/v1/webhooks/${webhook.id}`).set(account.auth).send({ active }).expect(200);

    expect((await replay().expect(202)).body.data).toEqual({ queued: 1 });
    await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, status: 'succeeded' })) === 1, 30_000, 'the replay delivered');
    const [delivered] = await deliveries.findBy({ webhookId: webhook.id });

    await setActive(false);
    for (const refused of [await replay().expect(409), await t.http().post(`/v1/webhooks/${webhook.id}/deliveries/${delivered.id}/redeliver`).set(account.auth).expect(409)]) {
      expect(refused.body.error).toMatchObject({ code: 'conflict', message: expect.stringContaining('inactive') });
      expect(refused.body.error.message).toContain('"active": true');
    }
    // A replay asked for while it was active, whose job runs after it was switched off.
    const replays = t.app.get<Queue>(getQueueToken(QUEUES.webhookReplays));
    const job = await replays.add('replay', { webhookId: webhook.id, since: since.toISOString(), until: new Date().toISOString() }, { jobId: `inactive-${webhook.id}` });
    await eventually(async () => (await job.getState()) === 'completed' || (await job.getState()) === 'unknown', 30_000, 'the replay job done');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await deliveries.countBy({ webhookId: webhook.id })).toBe(1);
    expect((await t.http().get(`/v1/webhooks/${webhook.id}/deliveries/${delivered.id}`).set(account.auth).expect(200)).body.data).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(mine()).toHaveLength(1);

    await setActive(true);
    expect((await t.http().post(`/v1/webhooks/${webhook.id}/deliveries/${delivered.id}/redeliver`).set(account.auth).expect(202)).body.data).toMatchObject({ status: 'pending' });
    await receiver.waitFor(() => mine().length === 2, 30_000, 'the redelivery once active');
    await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, status: 'succeeded' })) === 1, 30_000, 'the redelivery logged');
    expect((await replay().expect(202)).body.data).toEqual({ queued: 1 });
    await receiver.waitFor(() => mine().length === 3, 30_000, 'the replay once active');
  }, 60_000);

  it('takes until (exclusive), and refuses a bad window, another account\'s webhook and a key that is not elevated', async () => {
    const account = await createAccount(t.app);
    const base = new Date(Date.now() - 60_000);
    for (let i = 1; i <= 3; i++) await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(i), new Date(base.getTime() + i * 1000));
    await relayed(t, account.accountId);
    const webhook = (await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}/window`, events: ['file.uploaded'] }).expect(201)).body.data;
    const window = { since: base.toISOString(), until: new Date(base.getTime() + 3000).toISOString() };
    expect((await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send(window).expect(202)).body.data).toEqual({ queued: 2 });

    const bad = await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: window.until, until: window.since }).expect(400);
    expect(bad.body.error.code).toBe('invalid_request');
    await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: 'yesterday' }).expect(400);
    await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({}).expect(400);
    await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(owner.auth).send(window).expect(404);
    const plain = await createKey(t.app, account, ['read', 'write', 'delete', 'share'], false);
    await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(plain.auth).send(window).expect(403);
  });

  it('replays nothing that happened after the request: an until in the future is now', async () => {
    const account = await createAccount(t.app);
    const since = new Date(Date.now() - 60_000);
    const before = await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(1), new Date(since.getTime() + 1000));
    await relayed(t, account.accountId);
    const path = `/future-${account.accountId}`;
    const webhook = (await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}${path}`, events: ['file.uploaded'] }).expect(201)).body.data;
    const replays = t.app.get<Queue>(getQueueToken(QUEUES.webhookReplays));
    // The replay's job runs after an event that happens once the request was answered (as in a large window).
    await replays.pause();
    try {
      const until = new Date(Date.now() + 3_600_000).toISOString();
      const answer = await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: since.toISOString(), until }).expect(202);
      expect(answer.body.data).toEqual({ queued: 1 });
      const later = await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(2));
      const deliveries = t.app.get(DataSource).getRepository(WebhookDeliveryEntity);
      await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, eventId: later, status: 'succeeded' })) === 1, 30_000, 'the later event delivered');
      await replays.resume();
      await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, eventId: before, status: 'succeeded' })) === 1, 30_000, 'the replay delivered');
      await eventually(async () => (await replays.getJobCounts('active', 'waiting', 'delayed')).active === 0, 10_000, 'the replay job done');
      // The later event was delivered once, as it happened, and not replayed as well.
      const rows = await deliveries.findBy({ webhookId: webhook.id });
      expect(rows.map((r) => [r.eventId, r.origin]).sort()).toEqual([[before, 'replay'], [later, 'event']].sort());
    } finally {
      await replays.resume();
    }
  }, 60_000);

  it('carries on after a failure of the database during the replay, rather than dropping the rest of the window', async () => {
    const account = await createAccount(t.app);
    const since = new Date(Date.now() - 60_000);
    for (let i = 1; i <= 3; i++) await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(i), new Date(since.getTime() + i * 1000));
    await relayed(t, account.accountId);
    const path = `/hiccup-${account.accountId}`;
    const webhook = (await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}${path}`, events: ['file.uploaded'] }).expect(201)).body.data;
    const repository = t.app.get(WebhookDeliveryRepository);
    // The job's first statement fails once, as on a dropped connection or a failover.
    const hiccup = vi.spyOn(repository, 'pendingReplays').mockRejectedValueOnce(new Error('Connection terminated unexpectedly'));
    try {
      expect((await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: since.toISOString() }).expect(202)).body.data).toEqual({ queued: 3 });
      await receiver.waitFor((r) => r.filter((d) => d.path === `/hooks${path}`).length === 3, 30_000, 'the three replayed events');
      expect(hiccup).toHaveBeenCalled();
    } finally {
      hiccup.mockRestore();
    }
  }, 60_000);

  it('takes since and until only as RFC 3339 date-times, offsets and fractions exactly, and names the field and the form for anything else', async () => {
    const account = await createAccount(t.app);
    const base = Math.floor((Date.now() - 60_000) / 1000) * 1000;
    for (let i = 1; i <= 3; i++) await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(i), new Date(base + i * 1000));
    await relayed(t, account.accountId);
    const newWebhook = async () =>
      (await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}/forms`, events: ['file.uploaded'] }).expect(201)).body.data.id as string;
    // A webhook of its own for each window that queues, so no replay still pending from another holds its events back.
    const replay = async (window: Record<string, string>, webhookId?: string) =>
      t.http().post(`/v1/webhooks/${webhookId ?? (await newWebhook())}/replay`).set(account.auth).send(window);
    /** `base + ms` in the wall-clock time of a zone `offsetMinutes` east of UTC, e.g. 2026-11-21T15:30:01+05:30. */
    const zoned = (ms: number, offsetMinutes: number) => {
      const sign = offsetMinutes < 0 ? '-' : '+';
      const abs = Math.abs(offsetMinutes);
      const zone = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
      return new Date(base + ms + offsetMinutes * 60_000).toISOString().replace(/\.\d{3}Z$/, zone);
    };
    const utc = (ms: number) => new Date(base + ms).toISOString();

    // Offsets name the same instants as Z: events at +1 s and +2 s are in [+1 s, +3 s).
    const zones = await replay({ since: zoned(1000, 330), until: zoned(3000, -120) });
    expect([zones.status, zones.body.data]).toEqual([202, { queued: 2 }]);
    // A nanosecond after +1 s leaves the event at +1 s out: the fraction is not cut to milliseconds.
    const fine = await replay({ since: utc(1000).replace('.000Z', '.000000001Z'), until: utc(3000) });
    expect([fine.status, fine.body.data]).toEqual([202, { queued: 1 }]);

    const odd = [
      ['an ISO week date', '2026-W01'],
      ['a week date and time', '2026-W47-6T10:00:00Z'],
      ['an ordinal date', '2026-325'],
      ['a date alone', utc(0).slice(0, 10)],
      ['no time zone', utc(1000).replace('Z', '')],
      ['the basic format', '20261121T100000Z'],
      ['month 13', '2026-13-01T00:00:00Z'],
      ['30 February', '2026-02-30T00:00:00Z'],
      ['hour 24', '2026-11-21T24:00:00Z'],
      ['offset +24:00', '2026-11-21T10:00:00+24:00'],
      ['surrounding spaces', ` ${utc(1000)} `],
    ];
    const webhookId = await newWebhook();
    for (const [what, value] of odd) {
      for (const field of ['since', 'until']) {
        const window: Record<string, string> = field === 'since' ? { since: value } : { since: utc(0), until: value };
        const refused = await replay(window, webhookId);
        expect(refused.status, `${field}: ${what}`).toBe(400);
        expect(refused.body.error, `${field}: ${what}`).toMatchObject({
          code: 'invalid_request',
          message: expect.stringContaining(`${field}: must be an RFC 3339 date-time with a time zone`),
          details: { fields: [{ field, message: expect.stringContaining('such as 2026-11-21T10:00:00.000Z') }] },
        });
      }
    }
    // Refused, nothing was queued.
    expect(await t.app.get(DataSource).getRepository(WebhookDeliveryEntity).countBy({ webhookId })).toBe(0);
  }, 60_000);

  it('queues a large window in the background: the answer counts every event, and each gets its delivery', async () => {
    const account = await createAccount(t.app);
    // More than the job keeps pending at once (2,000): it steps aside while they go out, and resumes where it stopped.
    const total = 4500;
    const since = new Date(Date.now() - 3_600_000);
    await t.app.get(Transactions).run((tx) =>
      Outbox.record(tx, ...Array.from({ length: total }, (_, i) => domainEvent('file.uploaded', account.accountId, new Date(since.getTime() + i), uploaded(i)))),
    );
    await relayed(t, account.accountId);
    const webhook = (await t.http().post('/v1/webhooks').set(account.auth).send({ url: `${receiver.url}/large`, events: ['file.uploaded'] }).expect(201)).body.data;
    const answer = await t.http().post(`/v1/webhooks/${webhook.id}/replay`).set(account.auth).send({ since: since.toISOString() }).expect(202);
    expect(answer.body.data).toEqual({ queued: total });

    const deliveries = t.app.get(DataSource).getRepository(WebhookDeliveryEntity);
    await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id })) === total, 120_000, `${total} replay deliveries`);
    const large = () => receiver.received.filter((d) => d.path === '/hooks/large');
    await receiver.waitFor(() => new Set(large().map((d) => fileIdOf(d.body))).size === total, 120_000, 'every replayed event delivered');
    // Each event once: a resumed job made no second delivery of an event it had already replayed.
    await eventually(async () => (await deliveries.countBy({ webhookId: webhook.id, status: 'succeeded' })) === total, 30_000, 'every delivery logged');
    expect(large()).toHaveLength(total);
    expect(await deliveries.countBy({ webhookId: webhook.id })).toBe(total);
  }, 300_000);
});
