import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { seedFile } from '../../support/files.js';
import { uploadOk } from '../../support/uploads.js';
import { startTestApp, TEST_REDIS_URL, type TestApp } from '../../support/test-app.js';
import { createShare, fileLifecycle, outboxEvents, shareRow } from './share-fixtures.js';

describe('managing share links (POST, GET, DELETE /v1/shares)', () => {
  let t: TestApp;
  let owner: TestAccount;

  beforeAll(async () => {
    // Behind a trusted proxy on loopback, the visitor's address comes from X-Forwarded-For.
    t = await startTestApp({ PUBLIC_BASE_URL: 'https://files.example.test', TRUST_PROXY: '127.0.0.1' });
    owner = await createAccount(t.app);
  });
  afterAll(() => t.close());

  it('creates a link without password or expiry: 201 with the share record and an unguessable token', async () => {
    const file = await seedFile(t.app, owner, { name: 'report.pdf' });
    const before = Date.now();
    const res = await t.http().post('/v1/shares').set(owner.auth).send({ file_id: file.id });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.stringMatching(/^shr_/),
        url: expect.stringMatching(/^https:\/\/files\.example\.test\/s\/[A-Za-z0-9_-]{43}$/),
        file_id: file.id,
        password_protected: false,
        expires_at: null,
        created_by: owner.userId,
        created_at: expect.any(String),
        access_count: 0,
      },
    });
    expect(Date.parse(res.body.data.created_at)).toBeGreaterThanOrEqual(before - 1000);
    // 43 base64url characters carry 256 random bits.
    const other = await t.http().post('/v1/shares').set(owner.auth).send({ file_id: file.id }).expect(201);
    expect(other.body.data.url).not.toBe(res.body.data.url);
  });

  it('creates a link with password and expiry, storing only a scrypt hash of the password', async () => {
    const file = await seedFile(t.app, owner);
    const before = Date.now();
    const res = await t.http().post('/v1/shares').set(owner.auth).send({ file_id: file.id, password: 'hunter2-hunter2', expires_in: 3600 });
    expect(res.status).toBe(201);
    expect(res.body.data.password_protected).toBe(true);
    const expiresAt = Date.parse(res.body.data.expires_at);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3600_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3600_000 + 1000);
    const row = await shareRow(t.app, res.body.data.id);
    expect(row.password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(JSON.stringify(row)).not.toContain('hunter2');
  });

  it('accepts expires_in at both bounds', async () => {
    const file = await seedFile(t.app, owner);
    for (const expiresIn of [60, 31_536_000]) {
      await t.http().post('/v1/shares').set(owner.auth).send({ file_id: file.id, expires_in: expiresIn }).expect(201);
    }
  });

  it.each([
    ['expires_in below 60', { expires_in: 59 }, 'expires_in'],
    ['expires_in above a year', { expires_in: 31_536_001 }, 'expires_in'],
    ['a fractional expires_in', { expires_in: 90.5 }, 'expires_in'],
    ['expires_in as a string', { expires_in: '3600' }, 'expires_in'],
    ['an empty password', { password: '' }, 'password'],
    ['a password that is not a string', { password: 12345 }, 'password'],
    ['a password over 256 characters', { password: 'x'.repeat(257) }, 'password'],
    // X-Share-Password could never carry these: HTTP trims the spaces around a header value and forbids control characters.
    ['a password of only spaces', { password: '   ' }, 'password'],
    ['a password that begins with a space', { password: ' secret' }, 'password'],
    ['a password that ends with a space', { password: 'secret ' }, 'password'],
    ['a password with a line break', { password: 'sec\nret' }, 'password'],
    ['a password with a tab', { password: 'sec\tret' }, 'password'],
    ['an unknown field', { public: true }, 'public'],
    ['a file_id with a NUL byte', { file_id: 'file_\u0000' }, 'file_id'],
  ])('refuses %s with 400 invalid_request and creates nothing', async (_label, extra, field) => {
    const file = await seedFile(t.app, owner);
    const res = await t.http().post('/v1/shares').set(owner.auth).send({ file_id: file.id, ...extra });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    const list = await t.http().get(`/v1/shares?file_id=${file.id}`).set(owner.auth).expect(200);
    expect(list.body.data).toEqual([]);
  });

  it('takes a password with spaces inside, or in any script, that visitors can then send in X-Share-Password', async () => {
    for (const password of ['correct horse battery staple', 'пароль 日本', 'x']) {
      const share = await createShare(t, owner, { file_id: (await seedFile(t.app, owner)).id, password });
      await t.http().get(share.path).set('X-Share-Password', Buffer.from(password, 'utf8').toString('latin1')).expect(200);
    }
  });

  it('refuses a missing file_id with 400', async () => {
    const res = await t.http().post('/v1/shares').set(owner.auth).send({});
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toContain('file_id');
  });

  it('answers 404 for an unknown file, a trashed file and another account\'s file', async () => {
    const other = await createAccount(t.app);
    const othersFile = await seedFile(t.app, other);
    const trashed = await seedFile(t.app, owner);
    await fileLifecycle.moveToTrash(t, owner, trashed.id);
    for (const fileId of ['file_doesnotexist', trashed.id, othersFile.id]) {
      const res = await t.http().post('/v1/shares').set(owner.auth).send({ file_id: fileId });
      expect(res.status, fileId).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  it('refuses to share a file found infected (403 file_infected)', async () => {
    const file = await seedFile(t.app, owner);
    await fileLifecycle.setState(t.app, file.id, 'active', 'infected');
    const res = await t.http().post('/v1/shares').set(owner.auth).send({ file_id: file.id });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('file_infected');
  });

  it('needs the share scope to create and revoke, and read to list', async () => {
    const file = await seedFile(t.app, owner);
    const reader = await createKey(t.app, owner, ['read', 'write', 'delete']);
    const sharer = await createKey(t.app, owner, ['share']);
    const denied = await t.http().post('/v1/shares').set(reader.auth).send({ file_id: file.id });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('permission_denied');
    const created = await t.http().post('/v1/shares').set(sharer.auth).send({ file_id: file.id }).expect(201);
    await t.http().get('/v1/shares').set(sharer.auth).expect(403);
    await t.http().get('/v1/shares').set(reader.auth).expect(200);
    await t.http().delete(`/v1/shares/${created.body.data.id}`).set(reader.auth).expect(403);
    await t.http().delete(`/v1/shares/${created.body.data.id}`).set(sharer.auth).expect(200);
    await t.http().get('/v1/shares').expect(401);
  });

  it('answers one link by id with its status and analytics, revoked ones included, and 404 for another account\'s or an unknown one', async () => {
    const account = await createAccount(t.app);
    const file = await seedFile(t.app, account);
    const share = await createShare(t, account, { file_id: file.id, password: 'pw', expires_in: 3600 });
    await t.http().get(share.path).set('X-Share-Password', 'pw').expect(200);

    const res = await t.http().get(`/v1/shares/${share.id}`).set(account.auth).expect(200);
    const listed = (await t.http().get('/v1/shares').set(account.auth).expect(200)).body.data[0];
    expect(res.body).toEqual({ success: true, data: listed });
    expect(res.body.data).toMatchObject({ id: share.id, url: share.url, file_id: file.id, password_protected: true, active: true, access_count: 1, revoked_at: null });
    expect(res.body.data.last_accessed_at).toEqual(expect.any(String));

    await t.http().delete(`/v1/shares/${share.id}`).set(account.auth).expect(200);
    const revoked = await t.http().get(`/v1/shares/${share.id}`).set(account.auth).expect(200);
    expect(revoked.body.data).toMatchObject({ active: false, revoked_at: expect.any(String), access_count: 1 });

    for (const [auth, id] of [[owner.auth, share.id], [account.auth, 'shr_doesnotexist'], [account.auth, 'shr_%21%27'], [account.auth, 'x'.repeat(200)]] as const) {
      const missing = await t.http().get(`/v1/shares/${id}`).set(auth);
      expect(missing.status, id).toBe(404);
      expect(missing.body.error.code).toBe('not_found');
    }
    const sharer = await createKey(t.app, account, ['share']);
    expect((await t.http().get(`/v1/shares/${share.id}`).set(sharer.auth)).status).toBe(403);
  });

  it('records file.shared in the outbox with the file and the share', async () => {
    const account = await createAccount(t.app);
    const file = await seedFile(t.app, account, { name: 'plans.txt' });
    const share = await createShare(t, account, { file_id: file.id, password: 'pw-pw-pw', expires_in: 600 });
    const events = await outboxEvents(t.app, account, 'file.shared');
    expect(events).toHaveLength(1);
    expect(events[0].data).toEqual({
      file: { id: file.id, name: 'plans.txt' },
      share: { id: share.id, url: share.url, password_protected: true, expires_at: share.expires_at, created_by: account.userId },
    });
  });

  it('shares a file uploaded through the API: 201 with the share record, and file.shared recorded', async () => {
    const account = await createAccount(t.app);
    const uploaded = await uploadOk(t, account.auth, 'quarterly numbers', { name: 'uploaded plans.txt' });
    const before = Date.now();
    const res = await t.http().post('/v1/shares').set(account.auth).send({ file_id: uploaded.id, password: 'pw-pw-pw', expires_in: 600 }).expect(201);
    const share = res.body.data;
    expect(share).toMatchObject({ file_id: uploaded.id, password_protected: true, access_count: 0, url: expect.stringMatching(/\/s\/[A-Za-z0-9_-]{20,}$/) });
    expect(Date.parse(share.expires_at)).toBeGreaterThanOrEqual(before + 600_000 - 1000);
    expect(Date.parse(share.expires_at)).toBeLessThanOrEqual(Date.now() + 600_000 + 1000);
    const events = await outboxEvents(t.app, account, 'file.shared');
    expect(events.map((e) => e.data)).toEqual([
      {
        file: { id: uploaded.id, name: 'uploaded plans.txt' },
        share: { id: share.id, url: share.url, password_protected: true, expires_at: share.expires_at, created_by: account.userId },
      },
    ]);
  });

  it('lists the account\'s links newest first, paginated, filtered by file, with their status', async () => {
    const account = await createAccount(t.app);
    const a = await seedFile(t.app, account);
    const b = await seedFile(t.app, account);
    const first = await createShare(t, account, { file_id: a.id });
    const second = await createShare(t, account, { file_id: b.id, expires_in: 60 });
    const third = await createShare(t, account, { file_id: a.id, password: 'pw' });
    await t.http().delete(`/v1/shares/${first.id}`).set(account.auth).expect(200);
    // Another account's links never show.
    const other = await createAccount(t.app);
    await createShare(t, other, { file_id: (await seedFile(t.app, other)).id });

    const all = await t.http().get('/v1/shares').set(account.auth).expect(200);
    expect(all.body.data.map((s: { id: string }) => s.id)).toEqual([third.id, second.id, first.id]);
    expect(all.body.pagination).toEqual({ page: 1, per_page: 50, total_items: 3, total_pages: 1, next_cursor: null });
    expect(all.body.data[2]).toEqual({
      id: first.id,
      url: first.url,
      file_id: a.id,
      password_protected: false,
      expires_at: null,
      created_by: account.userId,
      created_at: expect.any(String),
      access_count: 0,
      active: false,
      revoked_at: expect.any(String),
      invalidated_at: null,
      last_accessed_at: null,
    });
    expect(all.body.data[0]).toMatchObject({ id: third.id, active: true, password_protected: true, revoked_at: null });

    const page2 = await t.http().get('/v1/shares?per_page=2&page=2').set(account.auth).expect(200);
    expect(page2.body.data.map((s: { id: string }) => s.id)).toEqual([first.id]);
    expect(page2.body.pagination).toEqual({ page: 2, per_page: 2, total_items: 3, total_pages: 2, next_cursor: null });

    const ofA = await t.http().get(`/v1/shares?file_id=${a.id}`).set(account.auth).expect(200);
    expect(ofA.body.data.map((s: { id: string }) => s.id)).toEqual([third.id, first.id]);
    const ofOthers = await t.http().get(`/v1/shares?file_id=${b.id}`).set(other.auth).expect(200);
    expect(ofOthers.body.data).toEqual([]);
  });

  it('refuses bad listing parameters with 400', async () => {
    for (const query of ['per_page=0', 'per_page=101', 'page=0', 'file_id=a&file_id=b', 'status=active', 'file_id=a%00b', 'file_id=..%2Fx']) {
      const res = await t.http().get(`/v1/shares?${query}`).set(owner.auth);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
  });

  it('revokes a link: {id, revoked: true}, the link answers 404, and a repeated DELETE answers 404', async () => {
    const file = await seedFile(t.app, owner);
    const share = await createShare(t, owner, { file_id: file.id });
    await t.http().get(share.path).expect(200);
    const res = await t.http().delete(`/v1/shares/${share.id}`).set(owner.auth);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { id: share.id, revoked: true, revoked_at: expect.any(String) } });
    const gone = await t.http().get(share.path);
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('not_found');
    await t.http().get(`${share.path}/download`).expect(404);
    const again = await t.http().delete(`/v1/shares/${share.id}`).set(owner.auth).expect(404);
    expect(again.body.error.code).toBe('not_found');
    // Analytics survive revocation.
    const listed = await t.http().get(`/v1/shares?file_id=${file.id}`).set(owner.auth).expect(200);
    expect(listed.body.data[0]).toMatchObject({ id: share.id, access_count: 1, active: false });
  });

  it('invalidates a link created while its file is being trashed: restoring the file does not bring it back', async () => {
    for (let round = 0; round < 10; round++) {
      const file = await uploadOk(t, owner.auth, `shared at once ${round}`, { filename: `race-${round}.txt` });
      const [created, trashed] = await Promise.all([
        t.http().post('/v1/shares').set(owner.auth).send({ file_id: file.id }),
        t.http().delete(`/v1/files/${file.id}`).set(owner.auth),
      ]);
      expect(trashed.status).toBe(200);
      // Either the link came first and the trash invalidated it, or the trash came first and there was no file to share.
      expect([201, 404]).toContain(created.status);
      await t.http().post(`/v1/files/${file.id}/restore`).set(owner.auth).expect(200);
      if (created.status === 404) continue;
      const path = new URL(created.body.data.url).pathname;
      expect((await t.http().get(path)).status, `round ${round}`).toBe(404);
      const listed = await t.http().get(`/v1/shares?file_id=${file.id}`).set(owner.auth).expect(200);
      expect(listed.body.data.map((share: { active: boolean }) => share.active)).toEqual([false]);
    }
  });

  it('answers 404 when revoking an unknown link or another account\'s link, which keeps working', async () => {
    const other = await createAccount(t.app);
    const share = await createShare(t, other, { file_id: (await seedFile(t.app, other)).id });
    for (const id of ['shr_unknown', share.id, 'x'.repeat(300)]) {
      const res = await t.http().delete(`/v1/shares/${id}`).set(owner.auth);
      expect(res.status, id).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    // A NUL byte is refused before any lookup, like everywhere else in the API.
    expect((await t.http().delete('/v1/shares/a%00b').set(owner.auth)).status).toBe(400);
    await t.http().get(share.path).expect(200);
  });

  it('documents the routes in OpenAPI: scopes for /v1/shares, no API key for /s/{token}', async () => {
    const doc = (await t.http().get('/docs-json').expect(200)).body;
    expect(doc.paths['/v1/shares'].post['x-required-scope']).toBe('share');
    expect(doc.paths['/v1/shares'].get['x-required-scope']).toBe('read');
    expect(doc.paths['/v1/shares/{share_id}'].delete['x-required-scope']).toBe('share');
    expect(Object.keys(doc.paths['/v1/shares'].post.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '404', '429']));
    for (const [path, method] of [['/s/{token}', 'get'], ['/s/{token}/download', 'get'], ['/s/{token}/download', 'post']]) {
      const operation = doc.paths[path][method];
      expect(operation.security, `${method} ${path}`).toBeUndefined();
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['401', '404', '410', '429']));
    }
  });

  it('records the visitor address a trusted proxy forwards, and locks out per visitor, not per proxy', async () => {
    const account = await createAccount(t.app);
    const share = await createShare(t, account, { file_id: (await seedFile(t.app, account)).id, password: 'pw' });
    await t.http().get(share.path).set('X-Forwarded-For', '203.0.113.7').set('X-Share-Password', 'pw').expect(200);
    const [event] = await outboxEvents(t.app, account, 'share.accessed');
    expect(event.data.access).toMatchObject({ ip_address: '203.0.113.7', action: 'view' });

    const redis = new Redis(TEST_REDIS_URL);
    await redis
      .set(`${t.config.redisKeyPrefix}:share-password-failures:${share.id}:198.51.100.1`, 10, 'PX', 60_000)
      .finally(() => redis.disconnect());
    await t.http().get(share.path).set('X-Forwarded-For', '198.51.100.1').set('X-Share-Password', 'pw').expect(429);
    await t.http().get(share.path).set('X-Forwarded-For', '198.51.100.2').set('X-Share-Password', 'pw').expect(200);
  });

  it('records a usable visitor in share.accessed whatever the client sends: a real address, and a user agent bounded and decoded', async () => {
    const account = await createAccount(t.app);
    const share = await createShare(t, account, { file_id: (await seedFile(t.app, account)).id });
    // X-Forwarded-For that is not an address: the trusted proxy's own address is the one known.
    await t.http().get(share.path).set('X-Forwarded-For', `<b>${'Z'.repeat(8000)}`).expect(200);
    // A user agent as long as the header limit allows: the event keeps its first 512 characters.
    const longAgent = `Crawler/1.0 ${'x'.repeat(12_000)}`;
    await t.http().get(share.path).set('User-Agent', longAgent).expect(200);
    // Non-ASCII sent as UTF-8 bytes (what curl does) is recorded as the text it is.
    await t.http().get(share.path).set('User-Agent', Buffer.from('Navigateur/2.0 (Français)', 'utf8').toString('latin1')).expect(200);

    const accesses = (await outboxEvents(t.app, account, 'share.accessed')).map((e) => e.data.access as Record<string, unknown>);
    expect(accesses.map((a) => a.ip_address)).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1']);
    expect(accesses[1].user_agent).toBe(longAgent.slice(0, 512));
    expect(accesses[2].user_agent).toBe('Navigateur/2.0 (Français)');
  });
});
