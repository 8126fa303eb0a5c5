import { describe, expect, it } from 'vitest';
import type { TestAccount } from '../../support/accounts.js';
import { startTestAppWithOwnRedis, type TestAppWithOwnRedis } from '../../support/redis-server.js';
import { eventually } from '../../support/time.js';
import { useTestApp } from '../../support/app-fixture.js';

describe('while Redis is down', () => {
  let t: TestAppWithOwnRedis;
  let account: TestAccount;

  useTestApp((started) => ({ t, owner: account } = started), { owner: { plan: 'free' }, start: startTestAppWithOwnRedis });

  it('keeps answering API requests promptly, reports Redis down in /health, and limits again once it is back', async () => {
    await t.http().get('/v1/user/info').set(account.auth).expect(200);
    await t.redis.stop();

    // Answered without waiting for Redis (the timeout only guards against a hang), uncounted: fail-open.
    const during = await t.http().get('/v1/user/info').set(account.auth).timeout(15_000);
    expect(during.status).toBe(200);
    expect(during.headers['x-ratelimit-remaining']).toBe('60');

    const health = await t.http().get('/health').timeout(5000);
    expect(health.status).toBe(503);
    expect(health.body.error.details).toMatchObject({ redis: { status: 'down' } });

    // An Idempotency-Key cannot be honoured without Redis: refused at once, rather than run and possibly run twice.
    const keyed = await t.http().post('/v1/folders').set({ ...account.auth, 'Idempotency-Key': 'during-outage' }).send({ name: 'During outage' }).timeout(15_000);
    expect(keyed.status).toBe(503);
    expect(keyed.body.error.code).toBe('service_unavailable');
    expect(Number(keyed.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const folders = await t.http().get('/v1/folders').set(account.auth).timeout(15_000).expect(200);
    expect(folders.body.data.map((f: { name: string }) => f.name)).not.toContain('During outage');

    await t.redis.restart();
    // Counting resumes: a request is counted against the plan's 60 again.
    await eventually(async () => Number((await t.http().get('/v1/user/info').set(account.auth)).headers['x-ratelimit-remaining']) < 60, 15_000, 'rate limiting to resume');
    expect((await t.http().get('/health')).status).toBe(200);
  });
});
