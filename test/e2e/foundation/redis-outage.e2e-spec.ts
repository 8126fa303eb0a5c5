import { describe, expect, it } from 'vitest';
import type { TestAccount } from '../../support/accounts.js';
import { startTestAppWithOwnRedis, type TestAppWithOwnRedis } from '../../support/redis-server.js';
import { useTestApp } from '../../support/app-fixture.js';

describe('while Redis is down', () => {
  let t: TestAppWithOwnRedis;
  let account: TestAccount;

  useTestApp((started) => ({ t, owner: account } = started), { owner: { plan: 'free' }, start: startTestAppWithOwnRedis });

  it('keeps answering API requests promptly, reports Redis down in /health, and limits again once it is back', async () => {
    await t.http().get('/v1/user/info').set(account.auth).expect(200);
    await t.redis.stop();

    const started = Date.now();
    const during = await t.http().get('/v1/user/info').set(account.auth).timeout(5000);
    expect(during.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(3000);

    const health = await t.http().get('/health').timeout(5000);
    expect(health.status).toBe(503);
    expect(health.body.error.details).toMatchObject({ redis: { status: 'down' } });

    await t.redis.restart();
    let limited = false;
    for (let i = 0; i < 50 && !limited; i++) {
      const res = await t.http().get('/v1/user/info').set(account.auth);
      limited = Number(res.headers['x-ratelimit-remaining']) < 60;
      if (!limited) await new Promise((r) => setTimeout(r, 200));
    }
    expect(limited).toBe(true);
    expect((await t.http().get('/health')).status).toBe(200);
  });
});
