import { describe, expect, it } from 'vitest';
import type { AppConfig } from '../../config/app-config.js';
import { generateWebhookSecret, WebhookSecretBox } from './webhook-secret-box.js';

const box = (key: string) => new WebhookSecretBox({ secretsEncryptionKey: key } as AppConfig);

describe('webhook secret box', () => {
  it('opens what it sealed, and never stores the secret in the clear', () => {
    const secret = generateWebhookSecret();
    const sealed = box('k'.repeat(40)).seal(secret);
    expect(sealed).not.toContain(secret);
    expect(box('k'.repeat(40)).open(sealed)).toBe(secret);
  });

  it('seals the same secret differently each time', () => {
    expect(box('k'.repeat(40)).seal('s')).not.toBe(box('k'.repeat(40)).seal('s'));
  });

  it('refuses to open with another key or after tampering', () => {
    const sealed = box('k'.repeat(40)).seal('secret');
    expect(() => box('x'.repeat(40)).open(sealed)).toThrow();
    const parts = sealed.split('.');
    parts[3] = Buffer.from('other').toString('base64url');
    expect(() => box('k'.repeat(40)).open(parts.join('.'))).toThrow();
  });

  it('generates long random secrets in the Standard Webhooks form (whsec_ + base64 of 32 bytes)', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(generateWebhookSecret());
  });
});
