import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';

describe('error envelope', () => {
  let t: TestApp;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started));

  it('answers unknown routes with 404 not_found in the envelope', async () => {
    for (const path of ['/v1/nothing-here', '/', '/v2/files', '/v1/user/info/extra']) {
      const res = await t.http().get(path).set(owner.auth);
      expect(res.status, path).toBe(404);
      expect(res.headers['content-type']).toMatch(/application\/json/);
      expect(res.body).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) } });
    }
  });

  it('answers malformed JSON with 400 invalid_request', async () => {
    const res = await t.http().post('/v1/api-keys').set(owner.auth).set('Content-Type', 'application/json').send('{"name": "x", scopes: [');
    expect(res.status).toBe(400);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a body it cannot parse with the caller\'s request id, as every other answer', async () => {
    const unparseable = { malformed: '{"name": ', 'nested too deep': '['.repeat(40) + ']'.repeat(40) };
    for (const [label, body] of Object.entries(unparseable)) {
      const res = await t.http().post('/v1/folders').set(owner.auth).set('Content-Type', 'application/json').set('X-Request-Id', `trace-${label.length}`).send(body);
      expect(res.status, label).toBe(400);
      expect(res.headers['x-request-id'], label).toBe(`trace-${label.length}`);
    }
  });

  it('refuses a body over the JSON size limit with a 4xx envelope', async () => {
    const res = await t.http().post('/v1/api-keys').set(owner.auth).send({ name: 'x'.repeat(200_000), scopes: ['read'] });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('invalid_request');
  });

  it.each([
    ['a page below 1', '/v1/api-keys?page=0', 'page'],
    ['a per_page above 100', '/v1/api-keys?per_page=101', 'per_page'],
    ['a non-numeric page', '/v1/api-keys?page=abc', 'page'],
    ['a repeated query parameter', '/v1/api-keys?page=1&page=2', 'page'],
    ['an unknown query parameter', '/v1/api-keys?colour=blue', 'colour'],
  ])('refuses %s with details.fields naming it', async (_label, path, field) => {
    const res = await t.http().get(path).set(owner.auth);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details.fields).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  });

  it('never shows a stack trace: an unexpected failure is 500 internal_error with a request id', async () => {
    const separate = await startTestApp();
    try {
      const account = await createAccount(separate.app);
      await separate.app.get(DataSource).destroy();
      const res = await separate.http().get('/v1/user/info').set(account.auth).set('X-Request-Id', 'trace-me-123');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        success: false,
        error: { code: 'internal_error', message: expect.stringContaining('trace-me-123'), details: { request_id: 'trace-me-123' } },
      });
      expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(js|ts):\d+/);
      expect(res.headers['x-request-id']).toBe('trace-me-123');
    } finally {
      await separate.close().catch(() => undefined);
    }
  });
});

describe('browsers', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('answers a CORS preflight from any origin and exposes the rate-limit headers', async () => {
    const res = await t
      .http()
      .options('/v1/user/info')
      .set('Origin', 'https://app.example.com')
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'authorization');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-headers']).toMatch(/Authorization/i);
    const account = await createAccount(t.app);
    const get = await t.http().get('/v1/user/info').set(account.auth).set('Origin', 'https://app.example.com');
    expect(get.headers['access-control-expose-headers']).toMatch(/X-RateLimit-Remaining/);
    // A 401's challenge too, as tus answers expose it.
    const refused = await t.http().get('/v1/user/info').set('Origin', 'https://app.example.com');
    expect(refused.status).toBe(401);
    expect(refused.headers['access-control-expose-headers']).toMatch(/WWW-Authenticate/);
  });
});

describe('NUL characters', () => {
  let t: TestApp;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started));

  it('are refused with 400 in path parameters, query strings and JSON bodies, on every database', async () => {
    const inPath = await t.http().delete('/v1/api-keys/a%00b').set(owner.auth);
    expect(inPath.status).toBe(400);
    expect(inPath.body.error.details.fields).toEqual([{ field: 'key_id', message: 'must not contain NUL characters' }]);
    const inQuery = await t.http().get('/v1/api-keys?page=1%00').set(owner.auth);
    expect(inQuery.status).toBe(400);
    // Named as any other problem with a query parameter is: by the parameter alone.
    expect(inQuery.body.error.details.fields).toEqual([{ field: 'page', message: 'must not contain NUL characters' }]);
    const reservedInQuery = await t.http().get('/v1/files?__proto__=x').set(owner.auth);
    expect(reservedInQuery.status).toBe(400);
    expect(reservedInQuery.body.error.details.fields).toEqual([{ field: '__proto__', message: 'is not allowed' }]);
    const inBody = await t.http().post('/v1/api-keys').set(owner.auth).send({ name: 'a\u0000b', scopes: ['read'] });
    expect(inBody.status).toBe(400);
    expect(inBody.body.error.details.fields).toEqual([{ field: 'name', message: 'must not contain NUL characters' }]);
  });
});
