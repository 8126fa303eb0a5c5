import { describe, expect, it } from 'vitest';
import { bearer, createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import type { TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';

describe('authentication and scopes', () => {
  let t: TestApp;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started), { owner: { plan: 'enterprise' } });

  it.each([
    ['no Authorization header', undefined],
    ['an empty header', ''],
    ['a Basic scheme', 'Basic dXNlcjpwYXNz'],
    ['"Bearer" without a key', 'Bearer'],
    ['a key with illegal characters', 'Bearer not a key!'],
    ['an unknown key', 'Bearer fss_thisKeyDoesNotExistAnywhere0000000000000'],
  ])('refuses %s with 401 authentication_failed and WWW-Authenticate', async (_label, header) => {
    const req = t.http().get('/v1/user/info');
    if (header !== undefined) req.set('Authorization', header);
    const res = await req;
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.body).toEqual({ success: false, error: { code: 'authentication_failed', message: expect.any(String) } });
  });

  it('accepts a valid key and tells who is calling', async () => {
    const res = await t.http().get('/v1/user/info').set(owner.auth);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toMatchObject({
      id: owner.userId,
      account_id: owner.accountId,
      plan: 'enterprise',
      storage: { used: 0, limit: 10 * 1024 ** 4, available: 10 * 1024 ** 4, percentage: 0 },
      limits: { requests_per_minute: 1000, max_file_size: 10 * 1024 ** 3 },
      key: { scopes: ['read', 'write', 'delete', 'share'], elevated: true },
    });
    expect(res.body.data.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('refuses a key without the route\'s scope with 403 permission_denied', async () => {
    const writeOnly = await createKey(t.app, owner, ['write']);
    const res = await t.http().get('/v1/user/info').set(writeOnly.auth);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('permission_denied');
    expect(res.body.error.details).toMatchObject({ required_scope: 'read' });
  });

  it('refuses a non-elevated key on an elevated route, even with every scope', async () => {
    const allScopes = await createKey(t.app, owner, ['read', 'write', 'delete', 'share'], false);
    const res = await t.http().get('/v1/api-keys').set(allScopes.auth);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('permission_denied');
  });

  it('stops accepting a key the moment it is revoked', async () => {
    const key = await createKey(t.app, owner, ['read']);
    expect((await t.http().get('/v1/user/info').set(key.auth)).status).toBe(200);
    const revoke = await t.http().delete(`/v1/api-keys/${key.id}`).set(owner.auth);
    expect(revoke.status).toBe(200);
    expect(revoke.body.data).toMatchObject({ id: key.id, revoked: true });
    const after = await t.http().get('/v1/user/info').set(key.auth);
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('authentication_failed');
  });

  it('does not let one account see or revoke another account\'s keys', async () => {
    const other = await createAccount(t.app);
    const key = await createKey(t.app, other, ['read']);
    const res = await t.http().delete(`/v1/api-keys/${key.id}`).set(owner.auth);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect((await t.http().get('/v1/user/info').set(bearer(key.apiKey))).status).toBe(200);
  });
});
