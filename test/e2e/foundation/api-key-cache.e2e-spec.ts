import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyEntity } from '../../../src/modules/accounts/api-key.entity.js';
import { createKey, type TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import { type ServerProcess, startServerProcess } from '../../support/processes.js';
import { startTestAppWithOwnRedis, type TestAppWithOwnRedis } from '../../support/redis-server.js';
import type { TestApp } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';

/**
 * API key lookups are cached in each server process (API_KEY_CACHE_SECONDS); revoking a key must still
 * take effect at once in every process. Two real server processes (dist/main.js) share one database and Redis.
 */
const CACHE_SECONDS = 5;

describe('API key cache across server processes', () => {
  let t: TestApp;
  let owner: TestAccount;
  let servers: ServerProcess[] = [];

  useTestApp((started) => ({ t, owner } = started));
  beforeAll(async () => {
    // One after the other, with a generous hang guard: two cold starts at once on a loaded machine take long.
    // A short cache lifetime, so that a test can see an entry expire.
    for (let i = 0; i < 2; i++) servers.push(await startServerProcess({ ...t.environment.env, API_KEY_CACHE_SECONDS: String(CACHE_SECONDS) }, undefined, 60_000));
  }, 150_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  const userInfo = (server: ServerProcess, auth: { Authorization: string }) => fetch(`${server.baseUrl}/v1/user/info`, { headers: auth }).then((res) => res.status);

  it('reuses a looked-up key: a revocation written straight into the database is not seen until the entry expires', async () => {
    const key = await createKey(t.app, owner, ['read']);
    expect(await userInfo(servers[0], key.auth)).toBe(200);
    // Bypassing the API (and so the invalidation message), as only an operator's manual SQL would.
    await t.app.get(DataSource).getRepository(ApiKeyEntity).update({ id: key.id }, { revokedAt: new Date() });
    expect(await userInfo(servers[0], key.auth), 'served from the cache').toBe(200);
    expect(await userInfo(servers[1], key.auth), 'never looked up there, so read from the database').toBe(401);
    // Once the entry has expired, the revocation is seen there too.
    const revokedAt = Date.now();
    await eventually(async () => (await userInfo(servers[0], key.auth)) === 401, (CACHE_SECONDS + 10) * 1000, 'the cached entry to expire');
    expect(Date.now() - revokedAt).toBeGreaterThan((CACHE_SECONDS - 1) * 1000);
  }, 30_000);

  it('a key revoked through one process is refused at once by every process that had it cached', async () => {
    for (let round = 0; round < 6; round++) {
      const key = await createKey(t.app, owner, ['read']);
      // Both processes have looked the key up, so both hold it.
      for (const server of servers) expect(await userInfo(server, key.auth)).toBe(200);
      const revoker = servers[round % 2];
      const other = servers[(round + 1) % 2];
      const revoked = await fetch(`${revoker.baseUrl}/v1/api-keys/${key.id}`, { method: 'DELETE', headers: owner.auth });
      expect(revoked.status).toBe(200);
      // The very next requests, without waiting: first on the other process, then on the one that revoked.
      expect(await userInfo(other, key.auth), `round ${round}: the other process`).toBe(401);
      expect(await userInfo(revoker, key.auth), `round ${round}: the revoking process`).toBe(401);
    }
  });

  it('a key revoked through one process while the other is answering requests with it is refused from then on', async () => {
    const key = await createKey(t.app, owner, ['read']);
    let revokedAt = 0;
    const statuses: Array<{ startedAt: number; status: number }> = [];
    const hammer = async () => {
      while (revokedAt === 0 || Date.now() - revokedAt < 300) {
        const startedAt = Date.now();
        statuses.push({ startedAt, status: await userInfo(servers[1], key.auth) });
      }
    };
    const revoke = async () => {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const res = await fetch(`${servers[0].baseUrl}/v1/api-keys/${key.id}`, { method: 'DELETE', headers: owner.auth });
      expect(res.status).toBe(200);
      revokedAt = Date.now();
    };
    await Promise.all([hammer(), revoke()]);
    // Every request sent after the revocation was answered is refused.
    const afterwards = statuses.filter((s) => s.startedAt >= revokedAt);
    expect(afterwards.length).toBeGreaterThan(0);
    // Refused: 401, then 429 once this address has presented 30 refused keys in a minute (the failed-authentication limit).
    expect(afterwards[0].status).toBe(401);
    expect(afterwards.filter((s) => s.status !== 401 && s.status !== 429)).toEqual([]);
    expect(statuses.some((s) => s.status === 200)).toBe(true);
  });
});

describe('API key cache without Redis', () => {
  let t: TestAppWithOwnRedis;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started), { start: startTestAppWithOwnRedis });

  const userInfo = (auth: { Authorization: string }) => t.http().get('/v1/user/info').set(auth).then((res) => res.status);
  const revokeInDatabase = (keyId: string) => t.app.get(DataSource).getRepository(ApiKeyEntity).update({ id: keyId }, { revokedAt: new Date() });

  it('forgets every cached key when it can no longer hear revocations, and caches none until it can again', async () => {
    const cachedBefore = await createKey(t.app, owner, ['read']);
    expect(await userInfo(cachedBefore.auth)).toBe(200);
    await t.redis.stop();
    // Revoked where no message can announce it: the process must go to the database.
    await revokeInDatabase(cachedBefore.id);
    await eventually(async () => (await userInfo(cachedBefore.auth)) === 401, 20_000, 'the cached key to be refused once Redis is gone');
    const usedWhileDown = await createKey(t.app, owner, ['read']);
    expect(await userInfo(usedWhileDown.auth)).toBe(200);
    await revokeInDatabase(usedWhileDown.id);
    expect(await userInfo(usedWhileDown.auth), 'not cached while Redis is away').toBe(401);

    await t.redis.restart();
    // Cached again once the subscription is back: a fresh key, revoked only in the database, is still served.
    await eventually(
      async () => {
        const key = await createKey(t.app, owner, ['read']);
        if ((await userInfo(key.auth)) !== 200) return false;
        await revokeInDatabase(key.id);
        return (await userInfo(key.auth)) === 200;
      },
      20_000,
      'key lookups to be cached again',
    );
  }, 90_000);
});
