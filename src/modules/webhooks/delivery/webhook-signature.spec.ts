import { createHmac } from 'node:crypto';
import { verify as verifyGitHubStyle } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { generateWebhookSecret } from '../webhook-secret-box.js';
import { buildDeliveryBody, sign, signAttempt, standardWebhooksKey } from './webhook-signature.js';

describe('webhook signatures', () => {
  const secret = 'whsec_test';
  const envelope = { event: 'file.uploaded', timestamp: '2026-11-21T10:00:00.000Z', webhook_id: 'wh_1', data: { file: { id: 'file_1', name: 'ä.txt' } } };

  it('signs as sha256= with lowercase hex', () => {
    expect(sign('key', 'The quick brown fox jumps over the lazy dog')).toBe('sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8');
  });

  it('puts the keys in the order of the specification, the signature last', () => {
    expect(Object.keys(JSON.parse(buildDeliveryBody(secret, envelope)))).toEqual(['event', 'timestamp', 'webhook_id', 'data', 'signature']);
  });

  it('signs the body without its signature field in the body', () => {
    const body = JSON.parse(buildDeliveryBody(secret, envelope));
    const { signature, ...rest } = body;
    const expected = 'sha256=' + createHmac('sha256', secret).update(JSON.stringify(rest)).digest('hex');
    expect(signature).toBe(expected);
  });

  it('builds the same bytes every time', () => {
    expect(buildDeliveryBody(secret, envelope)).toBe(buildDeliveryBody(secret, envelope));
  });
});

describe('Standard Webhooks signatures', () => {
  const body = buildDeliveryBody('whsec_x', { event: 'file.uploaded', timestamp: '2026-11-21T10:00:00.000Z', webhook_id: 'wh_1', data: { file: { name: 'ä.txt' } } });
  const now = () => Math.floor(Date.now() / 1000);

  it('matches the example of the Standard Webhooks specification', () => {
    // The test vector of the standard-webhooks reference libraries.
    const headers = signAttempt(['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
    expect(headers['webhook-signature']).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('a generated secret verifies with the standardwebhooks package as it is, and with @octokit/webhooks-methods on X-Service-Signature', async () => {
    const secret = generateWebhookSecret();
    const headers = signAttempt([secret], 'evt_1', now(), body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(await verifyGitHubStyle(secret, body, headers['X-Service-Signature'])).toBe(true);
    expect(headers['X-Service-Signature']).toBe(sign(secret, body));
  });

  it('any other secret is keyed by its UTF-8 bytes, which standardwebhooks takes as a raw key', () => {
    const legacyGenerated = `whsec_${'-_'.repeat(21)}A`; // base64url, as generated before: not the standard form
    for (const secret of ['my own secret', 'pässwörd-ü', legacyGenerated, 'whsec_YWJj', 'whsec_not base64!']) {
      expect(standardWebhooksKey(secret)).toEqual(Buffer.from(secret, 'utf8'));
      const headers = signAttempt([secret], 'evt_1', now(), body);
      expect(new Webhook(new TextEncoder().encode(secret), { format: 'raw' }).verify(body, headers)).toEqual(JSON.parse(body));
    }
  });

  it('decodes a whsec_ secret of 24 to 64 bytes in canonical base64, and only that', () => {
    const bytes = (n: number) => Buffer.alloc(n, 7);
    expect(standardWebhooksKey(`whsec_${bytes(24).toString('base64')}`)).toEqual(bytes(24));
    expect(standardWebhooksKey(`whsec_${bytes(64).toString('base64')}`)).toEqual(bytes(64));
    expect(standardWebhooksKey(`whsec_${bytes(23).toString('base64')}`)).toEqual(Buffer.from(`whsec_${bytes(23).toString('base64')}`));
    expect(standardWebhooksKey(`whsec_${bytes(65).toString('base64')}`)).toEqual(Buffer.from(`whsec_${bytes(65).toString('base64')}`));
    const unpadded = `whsec_${bytes(32).toString('base64').replace(/=+$/, '')}`;
    expect(standardWebhooksKey(unpadded)).toEqual(Buffer.from(unpadded));
  });

  it('signs with every secret given, newest first, while X-Service-Signature uses the newest only', () => {
    const [newest, previous] = [generateWebhookSecret(), generateWebhookSecret()];
    const headers = signAttempt([newest, previous], 'evt_2', now(), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(newest).verify(body, headers)).toBeTruthy();
    expect(new Webhook(previous).verify(body, headers)).toBeTruthy();
    expect(() => new Webhook(generateWebhookSecret()).verify(body, headers)).toThrow(/No matching signature/);
    expect(headers['X-Service-Signature']).toBe(sign(newest, body));
  });

  it('binds the signature to the event id and the timestamp', () => {
    const secret = generateWebhookSecret();
    const headers = signAttempt([secret], 'evt_3', now(), body);
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'evt_4' })).toThrow(/No matching signature/);
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) })).toThrow(/No matching signature/);
    expect(() => new Webhook(secret).verify(body.replace('ä', 'a'), headers)).toThrow(/No matching signature/);
  });
});
