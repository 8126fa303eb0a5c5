import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildDeliveryBody, sign } from './webhook-signature.js';

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
