import { createHmac } from 'node:crypto';
import { verify as verifyGitHubStyle } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Clock } from '../../../src/common/clock.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import type { TestApp } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { recordEvent, type ReceivedDelivery, startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const signatures = (delivery: ReceivedDelivery) => String(delivery.headers['webhook-signature']).split(' ');
const inBodySignature = (secret: string, delivery: ReceivedDelivery) => {
  const { signature: _signature, ...inner } = delivery.body;
  return 'sha256=' + createHmac('sha256', secret).update(JSON.stringify(inner)).digest('hex');
};

/** Which of these (generated) secrets verify the delivery's Standard Webhooks header with the standardwebhooks package. */
function verifiedBy(delivery: ReceivedDelivery, secrets: string[]): boolean[] {
  return secrets.map((secret) => {
    try {
      new Webhook(secret).verify(delivery.rawBody, delivery.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  });
}

describe('Standard Webhooks signatures beside the X-Service ones', () => {
  let t: TestApp;
  let owner: TestAccount;
  let receiver: WebhookReceiver;
  useTestApp((started) => ({ t, owner } = started));
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
  });
  afterAll(() => receiver.close());

  async function createWebhook(path: string, body: Record<string, unknown> = {}) {
    const created = await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `${receiver.url}/${path}`, events: ['file.uploaded'], ...body }).expect(201);
    return created.body.data as { id: string; secret: string };
  }
  const at = (path: string) => (received: ReceivedDelivery[]) => received.filter((d) => d.path === `/hooks/${path}`);
  const waitForDeliveries = async (path: string, count: number) => at(path)(await receiver.waitFor((r) => at(path)(r).length >= count, 20_000, `${count} deliveries at ${path}`));
  const upload = (name: string) => recordEvent(t.app, 'file.uploaded', owner.accountId, { file: { id: `file_${name}`, name } });

  it('a delivery verifies with the standardwebhooks package and @octokit/webhooks-methods, webhook-id being the event id', async () => {
    const webhook = await createWebhook('standard');
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const eventId = await upload('report.pdf');

    const [got] = await waitForDeliveries('standard', 1);
    expect(got.headers['webhook-id']).toBe(eventId);
    expect(got.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(signatures(got)).toEqual([expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/)]);
    // The generated secret goes into the standard library as it is.
    expect(new Webhook(webhook.secret).verify(got.rawBody, got.headers as Record<string, string>)).toEqual(got.body);
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(got.rawBody, got.headers as Record<string, string>)).toThrow();
    // The specification's signatures are unchanged.
    expect(await verifyGitHubStyle(webhook.secret, got.rawBody, got.headers['x-service-signature'] as string)).toBe(true);
    expect(got.body.signature).toBe(inBodySignature(webhook.secret, got));
    expect(got.headers).toMatchObject({ 'x-service-event': 'file.uploaded', 'x-service-webhook-id': webhook.id, 'user-agent': 'Service-Webhook/1.0' });
  });

  it('a secret chosen at creation signs the standard header with its UTF-8 bytes as the key', async () => {
    const secret = 'my own sécret, not base64';
    const webhook = await createWebhook('chosen', { secret });
    await upload('chosen.txt');
    const [got] = await waitForDeliveries('chosen', 1);
    expect(new Webhook(new TextEncoder().encode(secret), { format: 'raw' }).verify(got.rawBody, got.headers as Record<string, string>)).toEqual(got.body);
    expect(await verifyGitHubStyle(secret, got.rawBody, got.headers['x-service-signature'] as string)).toBe(true);
    expect(got.body.webhook_id).toBe(webhook.id);
  });

  it('webhook-id stays the event id on a retry and a redelivery, each attempt signed at its own timestamp', async () => {
    receiver.respondWith((delivery) => (delivery.path === '/hooks/retried' && at('retried')(receiver.received).indexOf(delivery) === 0 ? 500 : 200));
    const webhook = await createWebhook('retried');
    const eventId = await upload('retried.txt');
    const [first, second] = await waitForDeliveries('retried', 2);
    const [logged] = await eventually(async () => {
      const list = (await t.http().get(`/v1/webhooks/${webhook.id}/deliveries`).set(owner.auth).expect(200)).body.data;
      return list[0]?.status === 'succeeded' ? list : undefined;
    });
    await t.http().post(`/v1/webhooks/${webhook.id}/deliveries/${logged.id}/redeliver`).set(owner.auth).expect(202);
    const third = (await waitForDeliveries('retried', 3))[2];

    for (const got of [first, second, third]) {
      expect(got.headers['webhook-id']).toBe(eventId);
      expect(got.headers['x-service-delivery-id']).toBe(logged.id);
      expect(new Webhook(webhook.secret).verify(got.rawBody, got.headers as Record<string, string>)).toEqual(got.body);
    }
    expect(new Set([first.rawBody, second.rawBody, third.rawBody]).size).toBe(1);
    // The retry comes at least 5 s after the first attempt, so its timestamp (whole seconds) is later.
    expect(Number(second.headers['webhook-timestamp'])).toBeGreaterThan(Number(first.headers['webhook-timestamp']));
    expect(Number(third.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(Number(second.headers['webhook-timestamp']));
  });
});

describe('secret rotation', () => {
  let t: TestApp;
  let owner: TestAccount;
  let receiver: WebhookReceiver;
  useTestApp((started) => ({ t, owner } = started));
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
  });
  afterAll(() => receiver.close());

  const at = (path: string) => (received: ReceivedDelivery[]) => received.filter((d) => d.path === `/hooks/${path}`);
  const waitForDeliveries = async (path: string, count: number) => at(path)(await receiver.waitFor((r) => at(path)(r).length >= count, 20_000, `${count} deliveries at ${path}`));
  const upload = (name: string) => recordEvent(t.app, 'file.uploaded', owner.accountId, { file: { id: `file_${name}`, name } });
  const rotate = (id: string, body: Record<string, unknown> = {}) => t.http().post(`/v1/webhooks/${id}/rotate-secret`).set(owner.auth).send(body);

  it('signs with both secrets during the grace period, then with the new one only', async () => {
    const created = await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `${receiver.url}/rotating`, events: ['file.uploaded'] }).expect(201);
    const { id, secret: first } = created.body.data as { id: string; secret: string };
    await upload('before.txt');
    const [before] = await waitForDeliveries('rotating', 1);
    expect(signatures(before)).toHaveLength(1);
    expect(verifiedBy(before, [first])).toEqual([true]);

    // Rotation with the default grace period: 24 hours.
    const rotated = await rotate(id).expect(200);
    const second: string = rotated.body.data.secret;
    expect(rotated.body.data).toEqual({ id, secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/), rotated_at: expect.any(String), previous_secret_expires_at: expect.any(String) });
    expect(Date.parse(rotated.body.data.previous_secret_expires_at) - Date.parse(rotated.body.data.rotated_at)).toBe(86_400_000);
    expect(second).not.toBe(first);
    const shown = await t.http().get(`/v1/webhooks/${id}`).set(owner.auth).expect(200);
    expect(shown.body.data.previous_secret_expires_at).toBe(rotated.body.data.previous_secret_expires_at);
    expect(JSON.stringify(shown.body)).not.toContain(second);

    await upload('during.txt');
    const during = (await waitForDeliveries('rotating', 2))[1];
    expect(signatures(during)).toHaveLength(2);
    // A receiver still on the old secret and one already on the new secret both accept it.
    expect(verifiedBy(during, [second, first])).toEqual([true, true]);
    expect(await verifyGitHubStyle(second, during.rawBody, during.headers['x-service-signature'] as string)).toBe(true);
    expect(await verifyGitHubStyle(first, during.rawBody, during.headers['x-service-signature'] as string)).toBe(false);
    expect(during.body.signature).toBe(inBodySignature(second, during));

    // A second rotation with a one-second grace period: the first secret stops at once, the second after that second.
    const again = await rotate(id, { expires_in: 1 }).expect(200);
    const third: string = again.body.data.secret;
    expect(Date.parse(again.body.data.previous_secret_expires_at) - Date.parse(again.body.data.rotated_at)).toBe(1_000);
    await eventually(async () => (await t.http().get(`/v1/webhooks/${id}`).set(owner.auth).expect(200)).body.data.previous_secret_expires_at === null, 10_000, 'the grace period to end');

    await upload('after.txt');
    const after = (await waitForDeliveries('rotating', 3))[2];
    expect(signatures(after)).toHaveLength(1);
    expect(verifiedBy(after, [third, second, first])).toEqual([true, false, false]);
    expect(await verifyGitHubStyle(third, after.rawBody, after.headers['x-service-signature'] as string)).toBe(true);
    expect(after.body.signature).toBe(inBodySignature(third, after));
  });

  it('the default grace period ends 24 hours after the rotation (the service clock moved on, not waited for)', async () => {
    const created = await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `${receiver.url}/day`, events: ['file.uploaded'] }).expect(201);
    const { id, secret: old } = created.body.data as { id: string; secret: string };
    const rotated = (await rotate(id).expect(200)).body.data;
    const clock = t.app.get(Clock);
    const expiresAt = Date.parse(rotated.previous_secret_expires_at);
    try {
      // One millisecond before the end both secrets sign; at the end only the new one.
      vi.spyOn(clock, 'now').mockImplementation(() => new Date(expiresAt - 1));
      await upload('day-before.txt');
      const [before] = await waitForDeliveries('day', 1);
      expect(verifiedBy(before, [rotated.secret, old])).toEqual([true, true]);

      vi.spyOn(clock, 'now').mockImplementation(() => new Date(expiresAt));
      expect((await t.http().get(`/v1/webhooks/${id}`).set(owner.auth).expect(200)).body.data.previous_secret_expires_at).toBeNull();
      await upload('day-after.txt');
      const after = (await waitForDeliveries('day', 2))[1];
      expect(signatures(after)).toHaveLength(1);
      expect(verifiedBy(after, [rotated.secret, old])).toEqual([true, false]);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('a chosen secret of 256 multi-byte characters signs, and goes on signing beside the new one after a rotation', async () => {
    const secret = '€'.repeat(256);
    const asRawKey = new Webhook(new TextEncoder().encode(secret), { format: 'raw' });
    const created = await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `${receiver.url}/long-secret`, events: ['file.uploaded'], secret }).expect(201);
    await upload('long-before.txt');
    const [before] = await waitForDeliveries('long-secret', 1);
    expect(await verifyGitHubStyle(secret, before.rawBody, before.headers['x-service-signature'] as string)).toBe(true);
    expect(asRawKey.verify(before.rawBody, before.headers as Record<string, string>)).toEqual(before.body);

    const rotated = (await rotate(created.body.data.id).expect(200)).body.data;
    await upload('long-during.txt');
    const during = (await waitForDeliveries('long-secret', 2))[1];
    expect(signatures(during)).toHaveLength(2);
    expect(verifiedBy(during, [rotated.secret])).toEqual([true]);
    expect(asRawKey.verify(during.rawBody, during.headers as Record<string, string>)).toEqual(during.body);
  });

  it('expires_in 0 stops the old secret at once', async () => {
    const created = await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `${receiver.url}/at-once`, events: ['file.uploaded'] }).expect(201);
    const { id, secret: old } = created.body.data as { id: string; secret: string };
    const rotated = await rotate(id, { expires_in: 0 }).expect(200);
    expect(rotated.body.data.previous_secret_expires_at).toBeNull();
    await upload('at-once.txt');
    const [got] = await waitForDeliveries('at-once', 1);
    expect(verifiedBy(got, [rotated.body.data.secret, old])).toEqual([true, false]);
  });

  it('refuses a bad expires_in, an unknown webhook, another account\'s webhook and a key without elevation', async () => {
    const created = await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `${receiver.url}/refusals`, events: ['file.uploaded'] }).expect(201);
    const id = created.body.data.id;
    for (const expires_in of [-1, 604_801, 1.5, '60']) {
      const refused = await rotate(id, { expires_in }).expect(400);
      expect(refused.body.error.code).toBe('invalid_request');
      expect(refused.body.error.details.fields.map((f: { field: string }) => f.field)).toContain('expires_in');
    }
    expect((await rotate(id, { expires_in: 604_800 }).expect(200)).body.data.previous_secret_expires_at).toEqual(expect.any(String));
    await rotate('wh_unknown').expect(404);
    const stranger = await createAccount(t.app);
    await t.http().post(`/v1/webhooks/${id}/rotate-secret`).set(stranger.auth).send({}).expect(404);
    const plain = await createKey(t.app, owner, ['read', 'write', 'delete', 'share'], false);
    await t.http().post(`/v1/webhooks/${id}/rotate-secret`).set(plain.auth).send({}).expect(403);
    // An empty body is the default grace period.
    await t.http().post(`/v1/webhooks/${id}/rotate-secret`).set(owner.auth).expect(200);
  });
});
