import { describe, expect, it } from 'vitest';
import type { TestAccount } from '../../support/accounts.js';
import { startTestAppWithOwnRedis, type TestAppWithOwnRedis } from '../../support/redis-server.js';
import { eventually } from '../../support/time.js';
import { uploadOk } from '../../support/uploads.js';
import { useTestApp } from '../../support/app-fixture.js';
import { createShare } from './share-fixtures.js';

describe('share links while Redis is down', () => {
  let t: TestAppWithOwnRedis;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started), { start: startTestAppWithOwnRedis });

  it('refuses password-protected links with 503 instead of allowing unlimited guesses, and keeps open links working', async () => {
    // Uploaded through the real route, before Redis goes down.
    const open = await createShare(t, owner, { file_id: (await uploadOk(t, owner.auth, 'open to all', { name: 'open.txt' })).id });
    const protectedShare = await createShare(t, owner, { file_id: (await uploadOk(t, owner.auth, 'behind a password', { name: 'protected.txt' })).id, password: 'pw' });
    await t.http().get(protectedShare.path).set('X-Share-Password', 'pw').expect(200);
    await t.redis.stop();

    for (const password of ['pw', 'wrong']) {
      const res = await t.http().get(protectedShare.path).set('X-Share-Password', password).timeout(5000);
      expect(res.status, password).toBe(503);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.headers['retry-after']).toBeDefined();
    }
    await t.http().get(open.path).timeout(5000).expect(200);
    await t.http().get(`${open.path}/download`).timeout(5000).expect(200);

    await t.redis.restart();
    await eventually(async () => (await t.http().get(protectedShare.path).set('X-Share-Password', 'pw')).status === 200, 15_000, 'the protected link to work again');
  });
});
