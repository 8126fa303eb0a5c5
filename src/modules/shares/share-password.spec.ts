import { describe, expect, it } from 'vitest';
import { hashSharePassword, verifySharePassword } from './share-password.js';

describe('share passwords', () => {
  it('stores a salted scrypt hash with its parameters, never the password', async () => {
    const stored = await hashSharePassword('correct horse battery staple');
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(stored).not.toContain('correct horse');
  });

  it('gives the same password a different hash each time (random salt)', async () => {
    const [a, b] = await Promise.all([hashSharePassword('same'), hashSharePassword('same')]);
    expect(a).not.toBe(b);
    expect(await verifySharePassword('same', a)).toBe(true);
    expect(await verifySharePassword('same', b)).toBe(true);
  });

  it('accepts the right password and refuses wrong ones', async () => {
    const stored = await hashSharePassword('s3cret-pässword');
    expect(await verifySharePassword('s3cret-pässword', stored)).toBe(true);
    for (const wrong of ['', 's3cret-passwort', 'S3CRET-PÄSSWORD', 's3cret-pässword ', 's3cret-pässwor']) {
      expect(await verifySharePassword(wrong, stored), JSON.stringify(wrong)).toBe(false);
    }
  });

  it('treats canonically equal Unicode spellings as the same password', async () => {
    const stored = await hashSharePassword('caf\u00e9');
    expect(await verifySharePassword('cafe\u0301', stored)).toBe(true);
  });

  it('verifies hashes made with other parameters, read from the stored string', async () => {
    const stored = await hashSharePassword('pw');
    const [, , , , salt] = stored.split('$');
    const { scryptSync } = await import('node:crypto');
    const key = scryptSync('pw', Buffer.from(salt, 'base64url'), 32, { N: 1024, r: 8, p: 1 }).toString('base64url');
    expect(await verifySharePassword('pw', `scrypt$1024$8$1$${salt}$${key}`)).toBe(true);
    expect(await verifySharePassword('nope', `scrypt$1024$8$1$${salt}$${key}`)).toBe(false);
  });

  it('never matches a malformed or hostile stored value', async () => {
    const stored = await hashSharePassword('pw');
    const [, , , , salt, key] = stored.split('$');
    for (const bad of ['', 'pw', `bcrypt$10$${salt}$${key}`, `scrypt$1000$8$1$${salt}$${key}`, `scrypt$${2 ** 24}$8$1$${salt}$${key}`, `scrypt$32768$8$1$${salt}`]) {
      expect(await verifySharePassword('pw', bad), bad).toBe(false);
    }
  });
});
