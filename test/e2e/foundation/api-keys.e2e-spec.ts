import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { ApiKeyEntity } from '../../../src/modules/accounts/api-key.entity.js';
import { bearer, createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { TEST_DB, type TestApp } from '../../support/test-app.js';
import { queueBehindRowLock } from '../../support/row-lock.js';
import { useTestApp } from '../../support/app-fixture.js';

describe('API keys over HTTP', () => {
  let t: TestApp;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started));

  it('creates a key whose secret is shown once and works with exactly its scopes', async () => {
    const created = await t.http().post('/v1/api-keys').set(owner.auth).send({ name: 'uploader', scopes: ['write', 'read'] });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ name: 'uploader', scopes: ['read', 'write'], elevated: false });
    const secret: string = created.body.data.api_key;
    // At least 32 bytes of entropy: 43 base64url characters after the prefix.
    expect(secret).toMatch(/^fss_[A-Za-z0-9_-]{43}$/);
    expect(created.body.data.id).toMatch(/^key_/);

    const listed = await t.http().get('/v1/api-keys').set(owner.auth);
    expect(listed.status).toBe(200);
    expect(listed.body.pagination).toEqual({ page: 1, per_page: 50, total_items: 2, total_pages: 1 });
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    expect(listed.body.data.map((k: { id: string }) => k.id)).toContain(created.body.data.id);

    const info = await t.http().get('/v1/user/info').set(bearer(secret));
    expect(info.status).toBe(200);
    expect(info.body.data.key).toEqual({ id: created.body.data.id, scopes: ['read', 'write'], elevated: false });
  });

  it('rejects malformed key requests with field-level details and creates nothing', async () => {
    const before = await t.http().get('/v1/api-keys').set(owner.auth);
    const bad = await t.http().post('/v1/api-keys').set(owner.auth).send({ name: '', scopes: ['read', 'admin'], elevated: 'yes', extra: 1 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_request');
    const fields = bad.body.error.details.fields.map((f: { field: string }) => f.field);
    expect(fields).toEqual(expect.arrayContaining(['name', 'scopes', 'elevated', 'extra']));
    for (const name of [' ', ' \t\n ', '\u3000']) {
      const blank = await t.http().post('/v1/api-keys').set(owner.auth).send({ name, scopes: ['read'] });
      expect(blank.status, JSON.stringify(name)).toBe(400);
      expect(blank.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [expect.objectContaining({ field: 'name' })] } });
    }
    const after = await t.http().get('/v1/api-keys').set(owner.auth);
    expect(after.body.pagination.total_items).toBe(before.body.pagination.total_items);
  });

  it('keeps a key name exactly as answered, and refuses one no database can store as sent (an unpaired surrogate)', async () => {
    const before = await t.http().get('/v1/api-keys').set(owner.auth);
    const broken = await t.http().post('/v1/api-keys').set(owner.auth).set('Content-Type', 'application/json').send('{"name": "deploy \\ud800 key", "scopes": ["read"]}');
    expect(broken.status).toBe(400);
    expect(broken.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [expect.objectContaining({ field: 'name' })] } });
    expect((await t.http().get('/v1/api-keys').set(owner.auth)).body.pagination.total_items).toBe(before.body.pagination.total_items);

    const name = 'deploy 😀 ‮ key';
    const created = await t.http().post('/v1/api-keys').set(owner.auth).send({ name, scopes: ['read'] });
    expect(created.status).toBe(201);
    expect(created.body.data.name).toBe(name);
    const listed = await t.http().get('/v1/api-keys').set(owner.auth);
    expect(listed.body.data.find((k: { id: string }) => k.id === created.body.data.id).name).toBe(name);
  });

  it('counts a name\'s 200 characters as OpenAPI\'s maxLength does, in characters: 200 emoji are a name, 201 are not', async () => {
    const longest = '😀'.repeat(200);
    const created = await t.http().post('/v1/api-keys').set(owner.auth).send({ name: longest, scopes: ['read'] });
    expect(created.status).toBe(201);
    expect(created.body.data.name).toBe(longest);
    const listed = await t.http().get('/v1/api-keys?per_page=100').set(owner.auth);
    expect(listed.body.data.find((k: { id: string }) => k.id === created.body.data.id).name).toBe(longest);

    const tooLong = await t.http().post('/v1/api-keys').set(owner.auth).send({ name: `${longest}x`, scopes: ['read'] });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [expect.objectContaining({ field: 'name' })] } });
  });

  it('takes a name another live key has, and markup, as labels: keys are told apart by id and key_prefix', async () => {
    const names = ['deploy', 'deploy', '<script>alert(1)</script>'];
    const created = [];
    for (const name of names) created.push((await t.http().post('/v1/api-keys').set(owner.auth).send({ name, scopes: ['read'] }).expect(201)).body.data);
    expect(new Set(created.map((k) => k.id)).size).toBe(3);
    expect(new Set(created.map((k) => k.key_prefix)).size).toBe(3);
    const listed = await t.http().get('/v1/api-keys?per_page=100').set(owner.auth).expect(200);
    const byId = new Map(listed.body.data.map((k: { id: string; name: string }) => [k.id, k.name]));
    expect(created.map((k) => byId.get(k.id))).toEqual(names);
  });

  it('answers 404 for revoking an unknown key', async () => {
    const res = await t.http().delete('/v1/api-keys/key_doesnotexist').set(owner.auth);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it('an elevated key with only read can neither grant itself more scopes nor revoke a stronger key', async () => {
    const reader = await createKey(t.app, owner, ['read'], true);
    const before = await t.http().get('/v1/api-keys').set(owner.auth);

    const wider = await t.http().post('/v1/api-keys').set(reader.auth).send({ name: 'escalate', scopes: ['read', 'write', 'delete', 'share'], elevated: true });
    expect(wider.status).toBe(403);
    expect(wider.body.error.code).toBe('permission_denied');
    expect(wider.body.error.details.missing_scopes).toEqual(['write', 'delete', 'share']);

    const ownerKeyId = before.body.data.find((k: { elevated: boolean; scopes: string[] }) => k.scopes.length === 4 && k.elevated).id;
    const revoke = await t.http().delete(`/v1/api-keys/${ownerKeyId}`).set(reader.auth);
    expect(revoke.status).toBe(403);
    expect(revoke.body.error.code).toBe('permission_denied');

    // Nothing changed: the owner key still works and no key was added.
    const after = await t.http().get('/v1/api-keys').set(owner.auth);
    expect(after.status).toBe(200);
    expect(after.body.pagination.total_items).toBe(before.body.pagination.total_items);
  });

  it("a weaker key reusing another key's Idempotency-Key gets no replay of the stronger key it created", async () => {
    const reader = await createKey(t.app, owner, ['read'], true);
    const request = { name: 'full power', scopes: ['read', 'write', 'delete', 'share'], elevated: true };
    const created = await t.http().post('/v1/api-keys').set({ ...owner.auth, 'Idempotency-Key': 'new-key-1' }).send(request).expect(201);
    const before = await t.http().get('/v1/api-keys').set(owner.auth);

    // The same request with the same key from the weaker key is its own request, refused for its powers.
    const replay = await t.http().post('/v1/api-keys').set({ ...reader.auth, 'Idempotency-Key': 'new-key-1' }).send(request);
    expect(replay.status).toBe(403);
    expect(replay.body.error.code).toBe('permission_denied');
    expect(replay.headers['idempotent-replayed']).toBeUndefined();
    expect(JSON.stringify(replay.body)).not.toContain(created.body.data.api_key);
    expect((await t.http().get('/v1/api-keys').set(owner.auth)).body.pagination.total_items).toBe(before.body.pagination.total_items);

    // The key that sent it first still gets its answer replayed.
    const retried = await t.http().post('/v1/api-keys').set({ ...owner.auth, 'Idempotency-Key': 'new-key-1' }).send(request).expect(201);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.body.data.api_key).toBe(created.body.data.api_key);
  });

  it('an elevated key may create and revoke keys within its own scopes, elevated ones included', async () => {
    const keeper = await createKey(t.app, owner, ['read', 'share'], true);
    const created = await t.http().post('/v1/api-keys').set(keeper.auth).send({ name: 'sharer', scopes: ['share'], elevated: true });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ scopes: ['share'], elevated: true });
    const revoked = await t.http().delete(`/v1/api-keys/${created.body.data.id}`).set(keeper.auth);
    expect(revoked.status).toBe(200);
    expect((await t.http().get('/v1/user/info').set(bearer(created.body.data.api_key))).status).toBe(401);
  });

  it('a key may revoke itself (a leaked key disabled with nothing else at hand): answered 200, refused with 401 from then on', async () => {
    const leaked = await createKey(t.app, owner, ['read'], true);
    const revoked = await t.http().delete(`/v1/api-keys/${leaked.id}`).set(leaked.auth);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toMatchObject({ id: leaked.id, revoked: true });
    for (const path of ['/v1/user/info', '/v1/api-keys']) {
      const after = await t.http().get(path).set(leaked.auth);
      expect(after.status, path).toBe(401);
      expect(after.body.error.code).toBe('authentication_failed');
    }
    // Its retry is refused as every request with the key is, not answered 404.
    expect((await t.http().delete(`/v1/api-keys/${leaked.id}`).set(leaked.auth)).status).toBe(401);
    const listed = await t.http().get('/v1/api-keys?per_page=100').set(owner.auth).expect(200);
    expect(listed.body.data.map((k: { id: string }) => k.id)).not.toContain(leaked.id);
  });

  it('a key revoked while its key creation waits creates nothing: answered 401, no successor minted', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to hold the creation while the revocation commits; SQLite transactions take turns');
    const account = await createAccount(t.app);
    const leaked = await createKey(t.app, account, ['read'], true);
    const db = t.app.get(DataSource);
    // The creation was authenticated; its transaction waits behind a lock on the account while the key is revoked.
    const [created] = await queueBehindRowLock(
      t.app,
      'accounts',
      account.accountId,
      [() => t.http().post('/v1/api-keys').set(leaked.auth).send({ name: 'successor', scopes: ['read'], elevated: true }).then((res) => res)],
      () => t.http().delete(`/v1/api-keys/${leaked.id}`).set(account.auth).expect(200),
    );
    expect(created.status).toBe(401);
    expect(created.body.error?.code).toBe('authentication_failed');
    expect(await db.getRepository(ApiKeyEntity).countBy({ accountId: account.accountId, name: 'successor' })).toBe(0);
  });

  it('a key without elevation cannot manage keys at all', async () => {
    const plain = await createKey(t.app, owner, ['read', 'write', 'delete', 'share'], false);
    const res = await t.http().post('/v1/api-keys').set(plain.auth).send({ name: 'x', scopes: ['read'] });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('permission_denied');
  });

  it('refuses an account its 101st live key with 400 invalid_request and details.limit, creating nothing; a revoked key frees room', async () => {
    const crowded = await createAccount(t.app);
    // The owner key and 99 more: the account holds 100 live keys.
    for (let i = 0; i < 99; i++) await createKey(t.app, crowded, ['read']);
    const refused = await t.http().post('/v1/api-keys').set(crowded.auth).send({ name: 'one too many', scopes: ['read'] });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request', details: { limit: 100 } });
    const listed = await t.http().get('/v1/api-keys?per_page=100').set(crowded.auth).expect(200);
    expect(listed.body.pagination.total_items).toBe(100);
    expect(listed.body.data.map((k: { name: string }) => k.name)).not.toContain('one too many');

    const spare = listed.body.data.find((k: { id: string }) => k.id !== crowded.keyId).id;
    await t.http().delete(`/v1/api-keys/${spare}`).set(crowded.auth).expect(200);
    await t.http().post('/v1/api-keys').set(crowded.auth).send({ name: 'room again', scopes: ['read'] }).expect(201);
  });

  it('does not keep the 101st key\'s refusal for its Idempotency-Key: once a key is revoked, the retry with the same key creates', async () => {
    const crowded = await createAccount(t.app);
    for (let i = 0; i < 99; i++) await createKey(t.app, crowded, ['read']);
    const create = () => t.http().post('/v1/api-keys').set({ ...crowded.auth, 'Idempotency-Key': 'ci-key-2026' }).send({ name: 'ci', scopes: ['read'] });
    const refused = await create();
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request', details: { limit: 100 } });

    const listed = await t.http().get('/v1/api-keys?per_page=100').set(crowded.auth).expect(200);
    const spare = listed.body.data.find((k: { id: string }) => k.id !== crowded.keyId).id;
    await t.http().delete(`/v1/api-keys/${spare}`).set(crowded.auth).expect(200);
    const retried = await create();
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(retried.status).toBe(201);
    expect(retried.body.data).toMatchObject({ name: 'ci', scopes: ['read'] });
    // Now that it acted, its answer is kept: the same secret again, and still 100 live keys.
    const replayed = await create().expect(201);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body.data.api_key).toBe(retried.body.data.api_key);
    const after = await t.http().get('/v1/api-keys?per_page=100').set(crowded.auth).expect(200);
    expect(after.body.pagination.total_items).toBe(100);
  });

  it('lets only as many of several concurrent creations through as the limit has room for', async () => {
    const crowded = await createAccount(t.app);
    for (let i = 0; i < 97; i++) await createKey(t.app, crowded, ['read']);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => t.http().post('/v1/api-keys').set(crowded.auth).send({ name: `racer ${i}`, scopes: ['read'] })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 400, 400, 400, 400]);
    const listed = await t.http().get('/v1/api-keys?per_page=100').set(crowded.auth).expect(200);
    expect(listed.body.pagination.total_items).toBe(100);
  });
});
