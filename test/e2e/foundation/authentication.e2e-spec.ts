import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.factory.js';
import { loadConfig } from '../../../src/config/app-config.js';
import { bearer, createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { startOfFreshRateWindow } from '../../support/time.js';
import { useTestApp } from '../../support/app-fixture.js';
import { rawExchange } from '../../support/raw-http.js';
import { upload, uploadOk } from '../../support/uploads.js';

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

  it.each([
    ['a lower-case scheme', (key: string) => `bearer ${key}`],
    ['an upper-case scheme', (key: string) => `BEARER ${key}`],
    ['two spaces after the scheme', (key: string) => `Bearer  ${key}`],
  ])('accepts a valid key sent with %s, as HTTP allows', async (_label, header) => {
    const res = await t.http().get('/v1/user/info').set('Authorization', header(owner.apiKey));
    expect(res.status).toBe(200);
    expect(res.body.data.account_id).toBe(owner.accountId);
  });

  it('refuses a request with two Authorization headers, whichever of them holds a valid key', async () => {
    const host = new URL(t.baseUrl).host;
    const unknown = 'Bearer fss_thisKeyDoesNotExistAnywhere0000000000000';
    for (const [first, second] of [[`Bearer ${owner.apiKey}`, unknown], [unknown, `Bearer ${owner.apiKey}`], [`Bearer ${owner.apiKey}`, `Bearer ${owner.apiKey}`]]) {
      const answer = await rawExchange(t.baseUrl, `GET /v1/user/info HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${first}\r\nAuthorization: ${second}\r\nConnection: close\r\n\r\n`);
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
      expect(answer).toContain('"code":"authentication_failed"');
      expect(answer).not.toContain(owner.accountId);
    }
  });

  it('answers a 100 KB Authorization header 431 and one with bytes outside ASCII 401, each in the JSON envelope', async () => {
    const host = new URL(t.baseUrl).host;
    const huge = await rawExchange(t.baseUrl, `GET /v1/user/info HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${'a'.repeat(100_000)}\r\n\r\n`);
    expect(huge.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(JSON.parse(huge.slice(huge.indexOf('\r\n\r\n') + 4))).toEqual({ success: false, error: { code: 'invalid_request', message: expect.any(String) } });
    // Non-ASCII bytes (UTF-8 é and ÿ) around a valid key: not the key, whatever a lenient decoder would make of them.
    for (const header of [`Bearer \u00e9${owner.apiKey}`, `Bearer ${owner.apiKey}\u00ff`]) {
      const answer = await rawExchange(t.baseUrl, `GET /v1/user/info HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${header}\r\nConnection: close\r\n\r\n`);
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
      expect(answer).toContain('"code":"authentication_failed"');
    }
  });

  it('reports the storage an upload used as a whole percentage rounded down, as storage.warning does', async () => {
    const small = await createAccount(t.app, { storageLimit: 100 });
    expect((await uploadOk(t, small.auth, 'x'.repeat(29), { name: 'a.txt' })).size).toBe(29);
    const res = await t.http().get('/v1/user/info').set(small.auth);
    expect(res.status).toBe(200);
    // 29 / 100 * 100 is 28.999999999999996 in floating point: the answer must still be 29.
    expect(res.body.data.storage).toEqual({ used: 29, limit: 100, available: 71, percentage: 29 });
  });

  it('counts quota held by an upload in progress out of storage.available: an upload of that size then fits', async () => {
    const small = await createAccount(t.app, { storageLimit: 1000 });
    const started = await fetch(`${t.baseUrl}/v1/uploads`, {
      method: 'POST',
      headers: { ...small.auth, 'Tus-Resumable': '1.0.0', 'Upload-Length': '600', 'Upload-Metadata': `filename ${Buffer.from('big.bin').toString('base64')}` },
    });
    expect(started.status).toBe(201);
    const info = await t.http().get('/v1/user/info').set(small.auth).expect(200);
    expect(info.body.data.storage).toEqual({ used: 0, limit: 1000, available: 400, percentage: 0 });
    const tooBig = await upload(t, small.auth, 'x'.repeat(401), { name: 'b.bin' });
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error.code).toBe('storage_exceeded');
    await uploadOk(t, small.auth, 'x'.repeat(400), { name: 'c.bin' });
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

describe('failed authentication per client address', () => {
  let t: TestApp;
  let owner: TestAccount;
  const badKey = (n: number) => `Bearer fss_wrongKey${String(n).padStart(33, '0')}`;

  beforeAll(async () => {
    // Behind a proxy the client address comes from X-Forwarded-For, so one test can be many clients.
    t = await startTestApp({ TRUST_PROXY: 'true' });
    owner = await createAccount(t.app, { plan: 'enterprise' });
  });
  afterAll(() => t.close());

  const guess = (from: string, n: number) => t.http().get('/v1/user/info').set('X-Forwarded-For', from).set('Authorization', badKey(n));

  it('answers 429 with Retry-After once an address has presented 30 wrong keys in a minute, whatever the /64 host part', async () => {
    await startOfFreshRateWindow();
    const hosts = ['2001:db8:5:6::1', '2001:db8:5:6::2', '2001:db8:5:6:ffff::9'];
    for (let n = 0; n < 30; n++) expect((await guess(hosts[n % hosts.length], n)).status).toBe(401);
    const refused = await guess('2001:db8:5:6:1234::1', 30);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 'rate_limit_exceeded', details: { limit: 30, retry_after: expect.any(Number) } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    // A refused address is refused before any key is looked up, a valid one included.
    const valid = await t.http().get('/v1/user/info').set('X-Forwarded-For', '2001:db8:5:6::1').set(owner.auth);
    expect(valid.status).toBe(429);
  });

  it('refuses the address on every server process, a valid key included, once it is past the limit on one', async () => {
    const second = await createApp(loadConfig(t.environment.env));
    await second.listen(0, '127.0.0.1');
    try {
      const secondUrl = `http://127.0.0.1:${(second.getHttpServer().address() as { port: number }).port}`;
      await startOfFreshRateWindow();
      for (let n = 0; n < 30; n++) expect((await guess('203.0.113.50', n)).status).toBe(401);
      expect((await guess('203.0.113.50', 30)).status).toBe(429);
      const elsewhere = await request(secondUrl).get('/v1/user/info').set('X-Forwarded-For', '203.0.113.50').set(owner.auth);
      expect(elsewhere.status).toBe(429);
      expect(elsewhere.body.error.code).toBe('rate_limit_exceeded');
      // Another address is not refused there.
      await request(secondUrl).get('/v1/user/info').set('X-Forwarded-For', '203.0.113.51').set(owner.auth).expect(200);
    } finally {
      await second.close();
    }
  });

  it('counts other addresses, and valid keys, separately', async () => {
    await startOfFreshRateWindow();
    for (let n = 0; n < 30; n++) expect((await guess('198.51.100.7', n)).status).toBe(401);
    expect((await guess('198.51.100.7', 99)).status).toBe(429);
    expect((await guess('198.51.100.8', 99)).status).toBe(401);
    expect((await guess('2001:db8:5:7::1', 99)).status).toBe(401);
    for (let n = 0; n < 40; n++) {
      expect((await t.http().get('/v1/user/info').set('X-Forwarded-For', '198.51.100.9').set(owner.auth)).status).toBe(200);
    }
  });
});

describe('every route checks the scope and elevation its OpenAPI operation documents', () => {
  let t: TestApp;
  let owner: TestAccount;
  type Operation = { 'x-required-scope'?: string; 'x-requires-elevated-key'?: boolean; security?: unknown[] };
  let operations: { method: string; path: string; scope: string; elevated: boolean }[];

  useTestApp((started) => ({ t, owner } = started), { owner: { plan: 'enterprise' } });

  beforeAll(async () => {
    const doc: { paths: Record<string, Record<string, Operation>> } = (await t.http().get('/docs-json').expect(200)).body;
    operations = Object.entries(doc.paths).flatMap(([template, methods]) =>
      Object.entries(methods)
        .filter(([, op]) => op.security !== undefined)
        // Every path parameter names something that does not exist: the check comes first.
        .map(([method, op]) => ({ method, path: template.replace(/\{[^}]+\}/g, 'x_missing'), scope: op['x-required-scope']!, elevated: op['x-requires-elevated-key'] === true })),
    );
  });

  it("documents the scopes of the README's table (decisions.md), and elevation for the trash, webhooks and API keys", () => {
    const table: Record<string, string[]> = {
      read: ['GET /v1/files', 'GET /v1/files/x_missing', 'GET /v1/trash', 'GET /v1/user/info', 'GET /v1/folders', 'GET /v1/folders/x_missing', 'GET /v1/shares'],
      write: ['POST /v1/files/upload', 'PATCH /v1/files/x_missing', 'POST /v1/folders', 'PATCH /v1/folders/x_missing', 'POST /v1/files/x_missing/restore'],
      delete: ['DELETE /v1/files/x_missing', 'POST /v1/files/bulk-delete', 'DELETE /v1/folders/x_missing'],
      share: ['POST /v1/shares', 'DELETE /v1/shares/x_missing'],
    };
    const documented = new Map(operations.map((op) => [`${op.method.toUpperCase()} ${op.path}`, op]));
    for (const [scope, routes] of Object.entries(table)) {
      for (const route of routes) expect(documented.get(route)?.scope, route).toBe(scope);
    }
    const mustBeElevated = operations.filter((op) => /^\/v1\/(webhooks|api-keys)(\/|$)/.test(op.path) || (op.method === 'delete' && op.path === '/v1/trash'));
    expect(mustBeElevated.length).toBeGreaterThanOrEqual(15);
    for (const op of mustBeElevated) expect(op.elevated, `${op.method.toUpperCase()} ${op.path}`).toBe(true);
    const elevatedElsewhere = operations.filter((op) => op.elevated && !mustBeElevated.includes(op));
    expect(elevatedElsewhere.map((op) => `${op.method.toUpperCase()} ${op.path}`)).toEqual([]);
  });

  const send = (method: string, path: string, auth: Record<string, string>) =>
    t.http()[method as 'get'](path).set(auth).set('Tus-Resumable', '1.0.0');

  it('refuses a key without the documented scope, and a key without elevation where one is documented, with 403', async () => {
    expect(operations.length).toBeGreaterThanOrEqual(30);
    const allScopes = ['read', 'write', 'delete', 'share'] as const;
    const notElevated = await createKey(t.app, owner, [...allScopes], false);
    const withoutScope = Object.fromEntries(await Promise.all(allScopes.map(async (scope) => [scope, await createKey(t.app, owner, allScopes.filter((s) => s !== scope), true)])));
    for (const { method, path, scope, elevated } of operations) {
      const where = `${method.toUpperCase()} ${path}`;
      expect((await send(method, path, {})).status, `${where} without a key`).toBe(401);
      if (scope !== 'any') {
        const refused = await send(method, path, withoutScope[scope].auth);
        expect(refused.status, `${where} without ${scope}`).toBe(403);
        if (method !== 'head') expect(refused.body.error.details, where).toMatchObject({ required_scope: scope });
      }
      if (elevated) {
        const refused = await send(method, path, notElevated.auth);
        expect(refused.status, `${where} without elevation`).toBe(403);
        if (method !== 'head') expect(refused.body.error.details, where).toMatchObject({ requires_elevated: true });
      }
      // A key with just what is documented gets past the check (to a 4xx about the request itself).
      const enough = await createKey(t.app, owner, scope === 'any' ? ['read'] : [scope as (typeof allScopes)[number]], elevated);
      expect([401, 403], `${where} with ${scope}${elevated ? ', elevated' : ''}`).not.toContain((await send(method, path, enough.auth)).status);
    }
  });

  it('refuses permanent deletion to a key without elevation, leaving the file in place', async () => {
    const file = await uploadOk(t, owner.auth, 'keep me', { name: 'keep.txt' });
    const deleter = await createKey(t.app, owner, ['read', 'delete'], false);
    const refused = await t.http().delete(`/v1/files/${file.id}?permanent=true`).set(deleter.auth);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('permission_denied');
    await t.http().get(`/v1/files/${file.id}`).set(owner.auth).expect(200);
  });
});
