import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.factory.js';
import { loadConfig } from '../../../src/config/app-config.js';
import { createAccount, createKey } from '../../support/accounts.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { startOfFreshRateWindow } from '../../support/time.js';
import request from 'supertest';

/**
 * Windows are whole wall-clock minutes. After startOfFreshRateWindow a request sent at `sentAt` is
 * counted in the window holding `sentAt`, which ends at the next full minute: X-RateLimit-Reset, in
 * Unix seconds.
 */
const windowEndSeconds = (sentAt: number) => (Math.floor(sentAt / 60_000) + 1) * 60;
/** Retry-After: the whole seconds left in the window when the server counted the request, between sending and the answer. */
const retryAfterBounds = (sentAt: number, answeredAt: number) => {
  const end = windowEndSeconds(sentAt) * 1000;
  return { least: Math.ceil((end - answeredAt) / 1000), most: Math.ceil((end - sentAt) / 1000) };
};

describe('rate limits per plan', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it("refuses a free account's 61st request in a minute with 429, Retry-After and the rate headers", async () => {
    const account = await createAccount(t.app, { plan: 'free' });
    await startOfFreshRateWindow();
    for (let i = 1; i <= 60; i++) {
      const res = await t.http().get('/v1/user/info').set(account.auth);
      expect(res.status, `request ${i}`).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('60');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(60 - i));
    }
    const sentAt = Date.now();
    const refused = await t.http().get('/v1/user/info').set(account.auth);
    const answeredAt = Date.now();
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ success: false, error: { code: 'rate_limit_exceeded', message: expect.any(String), details: expect.any(Object) } });
    expect(refused.headers['x-ratelimit-limit']).toBe('60');
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    expect(refused.headers['x-ratelimit-reset']).toBe(String(windowEndSeconds(sentAt)));
    const { least, most } = retryAfterBounds(sentAt, answeredAt);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(least);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(most);
  });

  it('counts all keys of an account together and leaves other accounts alone', async () => {
    const account = await createAccount(t.app, { plan: 'free' });
    const second = await createKey(t.app, account, ['read']);
    const other = await createAccount(t.app, { plan: 'free' });
    await startOfFreshRateWindow();
    for (let i = 0; i < 30; i++) await t.http().get('/v1/user/info').set(account.auth).expect(200);
    for (let i = 0; i < 30; i++) await t.http().get('/v1/user/info').set(second.auth).expect(200);
    await t.http().get('/v1/user/info').set(second.auth).expect(429);
    await t.http().get('/v1/user/info').set(account.auth).expect(429);
    const untouched = await t.http().get('/v1/user/info').set(other.auth).expect(200);
    expect(untouched.headers['x-ratelimit-remaining']).toBe('59');
  });

  it('gives pro and enterprise accounts their own limits', async () => {
    const pro = await createAccount(t.app, { plan: 'pro' });
    const enterprise = await createAccount(t.app, { plan: 'enterprise' });
    const p = await t.http().get('/v1/user/info').set(pro.auth).expect(200);
    const e = await t.http().get('/v1/user/info').set(enterprise.auth).expect(200);
    expect(p.headers['x-ratelimit-limit']).toBe('300');
    expect(e.headers['x-ratelimit-limit']).toBe('1000');
  });

  it('puts the rate headers on error answers of authenticated requests too', async () => {
    const account = await createAccount(t.app);
    await startOfFreshRateWindow(5_000);
    const sentAt = Date.now();
    const res = await t.http().delete('/v1/api-keys/key_missing').set(account.auth);
    expect(res.status).toBe(404);
    expect(res.headers['x-ratelimit-limit']).toBe('1000');
    expect(res.headers['x-ratelimit-remaining']).toBe('999');
    expect(res.headers['x-ratelimit-reset']).toBe(String(windowEndSeconds(sentAt)));
  });

  it('shares one limit between two server processes through Redis', async () => {
    const account = await createAccount(t.app, { plan: 'free' });
    // A second application instance on the same database and Redis, as a second process would be.
    const second = await createApp(loadConfig(t.environment.env));
    await second.listen(0, '127.0.0.1');
    try {
      const secondUrl = `http://127.0.0.1:${(second.getHttpServer().address() as { port: number }).port}`;
      await startOfFreshRateWindow();
      for (let i = 0; i < 30; i++) await t.http().get('/v1/user/info').set(account.auth).expect(200);
      for (let i = 0; i < 30; i++) await request(secondUrl).get('/v1/user/info').set(account.auth).expect(200);
      const refused = await request(secondUrl).get('/v1/user/info').set(account.auth);
      expect(refused.status).toBe(429);
      await t.http().get('/v1/user/info').set(account.auth).expect(429);
    } finally {
      await second.close();
    }
  });
});
