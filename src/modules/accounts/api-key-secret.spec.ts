import { describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from './api-key-secret.js';

describe('API key secrets', () => {
  it('carry 256 random bits and are stored only as their SHA-256', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a.secret).not.toBe(b.secret);
    expect(Buffer.from(a.secret.slice(4), 'base64url')).toHaveLength(32);
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.hash).toBe(hashApiKey(a.secret));
    expect(a.hash).not.toContain(a.secret.slice(4, 20));
    expect(a.secret.startsWith(a.displayPrefix)).toBe(true);
  });
});
