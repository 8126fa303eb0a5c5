import { type AddressInfo, createServer, type Socket } from 'node:net';
import { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { EVENT_NAMES } from '../../../src/infra/outbox/domain-event.js';
import { WebhookEntity } from '../../../src/modules/webhooks/webhook.entity.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { TEST_DB, type TestApp } from '../../support/test-app.js';
import { queueBehindRowLock } from '../../support/row-lock.js';
import { useTestApp } from '../../support/app-fixture.js';
import { eventually } from '../../support/time.js';

describe('webhook configuration API', () => {
  let t: TestApp;
  let owner: TestAccount;
  let stranger: TestAccount;

  useTestApp((started) => ({ t, owner } = started));
  beforeAll(async () => {
    stranger = await createAccount(t.app);
  });

  const create = (account: TestAccount, body: Record<string, unknown>) => t.http().post('/v1/webhooks').set(account.auth).send(body);

  it('creates a webhook and shows its secret only in the creation answer', async () => {
    const created = await create(owner, { url: 'https://hooks.example.com/storage', events: ['file.uploaded', 'file.deleted'] }).expect(201);
    expect(created.body).toEqual({
      success: true,
      data: {
        id: expect.stringMatching(/^wh_/),
        url: 'https://hooks.example.com/storage',
        events: ['file.uploaded', 'file.deleted'],
        active: true,
        secret: expect.stringMatching(/^whsec_.{40,}$/),
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      },
    });
    const { id, secret } = created.body.data;

    const listed = await t.http().get('/v1/webhooks').set(owner.auth).expect(200);
    const mine = listed.body.data.find((w: { id: string }) => w.id === id);
    expect(mine).toEqual({
      id,
      url: 'https://hooks.example.com/storage',
      events: ['file.uploaded', 'file.deleted'],
      active: true,
      created_at: created.body.data.created_at,
      updated_at: created.body.data.created_at,
      disabled_reason: null,
      disabled_at: null,
      previous_secret_expires_at: null,
    });
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    const one = await t.http().get(`/v1/webhooks/${id}`).set(owner.auth).expect(200);
    expect(one.body.data).toEqual(mine);

    // At rest the secret is encrypted, not stored as given.
    const [row] = await t.app.get(DataSource).query('SELECT secret_sealed FROM webhooks WHERE id = $1'.replace('$1', t.config.database.kind === 'sqlite' ? '?' : '$1'), [id]);
    expect(row.secret_sealed).not.toContain(secret);
    expect(row.secret_sealed).toMatch(/^v1\./);
  });

  it('keeps a given secret, honours active=false, and accepts all seven events', async () => {
    const created = await create(owner, { url: 'https://hooks.example.com/all', events: [...EVENT_NAMES], secret: 'my-own-secret', active: false }).expect(201);
    expect(created.body.data).toMatchObject({ secret: 'my-own-secret', active: false, events: [...EVENT_NAMES] });
  });

  it('refuses a secret of its own made only of whitespace, or empty, naming the field and creating nothing', async () => {
    const account = await createAccount(t.app);
    for (const secret of ['   ', '\t\n ', '\u00a0\u2003', '']) {
      const refused = await create(account, { url: 'https://hooks.example.com/blank-secret', events: ['file.uploaded'], secret }).expect(400);
      expect(refused.body.error, JSON.stringify(secret)).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('secret: must') });
      expect(refused.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(expect.arrayContaining(['secret']));
      if (secret) expect(refused.body.error.details.fields).toEqual([{ field: 'secret', message: 'must contain a character other than whitespace' }]);
    }
    expect((await t.http().get('/v1/webhooks').set(account.auth).expect(200)).body.data).toEqual([]);
    // Spaces beside other characters are part of a secret, taken exactly as written.
    const created = await create(account, { url: 'https://hooks.example.com/blank-secret', events: ['file.uploaded'], secret: ' my own secret ' }).expect(201);
    expect(created.body.data.secret).toBe(' my own secret ');
  });

  it('keeps a given secret of 256 characters, multi-byte ones too, and rotates it out', async () => {
    // Sealed, each is longer than the 300 characters the secret columns once held on PostgreSQL.
    for (const secret of ['s'.repeat(193), 's'.repeat(256), '€'.repeat(256), '🔑'.repeat(256)]) {
      const created = await create(owner, { url: 'https://hooks.example.com/long-secret', events: ['file.uploaded'], secret }).expect(201);
      expect(created.body.data.secret).toBe(secret);
      // The secret rotated out is kept beside the new one for the grace period.
      const rotated = await t.http().post(`/v1/webhooks/${created.body.data.id}/rotate-secret`).set(owner.auth).send({}).expect(200);
      expect(rotated.body.data.previous_secret_expires_at).toEqual(expect.any(String));
      await t.http().delete(`/v1/webhooks/${created.body.data.id}`).set(owner.auth).expect(200);
    }
  });

  it('refuses a url with spaces around it, or tabs, newlines or spaces inside, naming the field and creating nothing', async () => {
    const account = await createAccount(t.app);
    for (const url of [' https://hooks.example.com/padded', 'https://hooks.example.com/padded ', 'https://hooks.example.com/padded\n', 'https://hooks.example.com/pad\tded', 'https://hooks.example.com/my hook']) {
      const refused = await create(account, { url, events: ['file.uploaded'] }).expect(400);
      expect(refused.body.error, JSON.stringify(url)).toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining('url: must not contain spaces or control characters'),
        details: { fields: [{ field: 'url', message: expect.stringContaining('remove them around the URL, percent-encode them inside') }] },
      });
    }
    expect((await t.http().get('/v1/webhooks').set(account.auth).expect(200)).body.data).toEqual([]);
    // Percent-encoded, the same receiver is taken exactly as written.
    const created = await create(account, { url: 'https://hooks.example.com/my%20hook', events: ['file.uploaded'] }).expect(201);
    expect(created.body.data.url).toBe('https://hooks.example.com/my%20hook');
  });

  it('refuses a url the parser would read as another one, or one on port 0, naming the field and creating nothing', async () => {
    const account = await createAccount(t.app);
    const repaired = {
      // Read as https://hooks.example.com/x: the stored url would not be the one delivered to.
      'https:///hooks.example.com/x': 'https://hooks.example.com/x',
      'https:hooks.example.com/x': 'https://hooks.example.com/x',
      'https:/hooks.example.com/x': 'https://hooks.example.com/x',
      'https://hooks.example.com\\x': 'https://hooks.example.com/x',
      'https:\\\\hooks.example.com/x': 'https://hooks.example.com/x',
    };
    for (const [url, readAs] of Object.entries(repaired)) {
      const refused = await create(account, { url, events: ['file.uploaded'] }).expect(400);
      expect(refused.body.error, url).toMatchObject({
        code: 'invalid_request',
        details: { fields: [{ field: 'url', message: expect.stringContaining(`would be read as ${readAs}`) }] },
      });
    }
    // Port 0 names no receiver: every delivery would fail to connect.
    for (const url of ['https://hooks.example.com:0/x', 'https://hooks.example.com:000/x']) {
      const refused = await create(account, { url, events: ['file.uploaded'] }).expect(400);
      expect(refused.body.error.details.fields, url).toEqual([{ field: 'url', message: 'must not use port 0' }]);
    }
    expect((await t.http().get('/v1/webhooks').set(account.auth).expect(200)).body.data).toEqual([]);
    // Written out, with a scheme in capitals and a port, the same receiver is taken exactly as written.
    for (const url of ['HTTPS://hooks.example.com/x', 'https://hooks.example.com:8443/x']) {
      expect((await create(account, { url, events: ['file.uploaded'] }).expect(201)).body.data.url).toBe(url);
    }
  });

  it('updates events and active, and refuses an empty or invalid change', async () => {
    const { id } = (await create(owner, { url: 'https://hooks.example.com/p', events: ['file.uploaded'] }).expect(201)).body.data;
    const patched = await t.http().patch(`/v1/webhooks/${id}`).set(owner.auth).send({ events: ['folder.created', 'share.accessed'], active: false }).expect(200);
    expect(patched.body.data).toMatchObject({ id, events: ['folder.created', 'share.accessed'], active: false, url: 'https://hooks.example.com/p' });
    expect(patched.body.data).not.toHaveProperty('secret');
    expect((await t.http().patch(`/v1/webhooks/${id}`).set(owner.auth).send({ active: true }).expect(200)).body.data.active).toBe(true);

    for (const body of [{}, { events: [] }, { events: ['file.exploded'] }, { active: 'yes' }, { url: 'https://elsewhere.example.com' }, { secret: 'x' }]) {
      const refused = await t.http().patch(`/v1/webhooks/${id}`).set(owner.auth).send(body).expect(400);
      expect(refused.body.error.code).toBe('invalid_request');
    }
    const after = await t.http().get(`/v1/webhooks/${id}`).set(owner.auth).expect(200);
    expect(after.body.data).toMatchObject({ events: ['folder.created', 'share.accessed'], active: true });
  });

  it('switches on a webhook turned off while its PATCH {active: true} waited, as the answer says', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to interleave the two; SQLite transactions take turns');
    const { id } = (await create(owner, { url: 'https://hooks.example.com/turned-off-meanwhile', events: ['file.uploaded'] }).expect(201)).body.data;
    const db = t.app.get(DataSource);
    const lockWaits = async () =>
      (await db.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"))[0].n as number;
    // The service turns the webhook off (24 hours of failed deliveries) in a transaction that holds its row while the PATCH comes.
    const deactivation = db.createQueryRunner();
    await deactivation.startTransaction();
    let patched;
    try {
      await deactivation.query('SELECT id FROM webhooks WHERE id = $1 FOR UPDATE', [id]);
      patched = t.http().patch(`/v1/webhooks/${id}`).set(owner.auth).send({ active: true }).then((answer) => answer);
      await eventually(async () => (await lockWaits()) > 0, 10_000, 'the PATCH to wait for the webhook row');
      await deactivation.query("UPDATE webhooks SET active = false, disabled_reason = 'deliveries_failing', disabled_at = $2 WHERE id = $1", [id, new Date().toISOString()]);
      await deactivation.commitTransaction();
    } finally {
      if (deactivation.isTransactionActive) await deactivation.rollbackTransaction();
      await deactivation.release();
    }
    const answer = await patched;
    expect(answer.status).toBe(200);
    expect(answer.body.data).toMatchObject({ active: true, disabled_reason: null });
    expect((await t.http().get(`/v1/webhooks/${id}`).set(owner.auth).expect(200)).body.data).toMatchObject({ active: true, disabled_reason: null, disabled_at: null });
  });

  it('deletes a webhook with {id, deleted: true}; a second delete is not_found', async () => {
    const { id } = (await create(owner, { url: 'https://hooks.example.com/d', events: ['file.uploaded'] }).expect(201)).body.data;
    expect((await t.http().delete(`/v1/webhooks/${id}`).set(owner.auth).expect(200)).body).toEqual({ success: true, data: { id, deleted: true } });
    expect((await t.http().delete(`/v1/webhooks/${id}`).set(owner.auth).expect(404)).body.error.code).toBe('not_found');
    await t.http().get(`/v1/webhooks/${id}`).set(owner.auth).expect(404);
  });

  it.each([
    [{ events: ['file.uploaded'] }, 'url'],
    [{ url: 'https://h.example.com', events: [] }, 'events'],
    [{ url: 'https://h.example.com' }, 'events'],
    [{ url: 'https://h.example.com', events: ['file.uploaded', 'file.exploded'] }, 'events'],
    [{ url: 'https://h.example.com', events: ['webhook.test'] }, 'events'],
    [{ url: 'https://h.example.com', events: 'file.uploaded' }, 'events'],
    [{ url: 'https://h.example.com', events: ['file.uploaded', 'file.uploaded'] }, 'events'],
    [{ url: 'not a url', events: ['file.uploaded'] }, 'url'],
    [{ url: 'ftp://h.example.com', events: ['file.uploaded'] }, 'url'],
    [{ url: 'https://h.example.com', events: ['file.uploaded'], secret: '' }, 'secret'],
    [{ url: 'https://h.example.com', events: ['file.uploaded'], secret: 's'.repeat(257) }, 'secret'],
    [{ url: 'https://h.example.com', events: ['file.uploaded'], active: 'yes' }, 'active'],
    [{ url: 'https://h.example.com', events: ['file.uploaded'], colour: 'red' }, 'colour'],
  ])('refuses %j with invalid_request naming %s', async (body, field) => {
    const before = (await t.http().get('/v1/webhooks').set(stranger.auth).expect(200)).body.pagination.total_items;
    const refused = await create(stranger, body).expect(400);
    expect(refused.body.success).toBe(false);
    expect(refused.body.error.code).toBe('invalid_request');
    expect(refused.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    expect((await t.http().get('/v1/webhooks').set(stranger.auth).expect(200)).body.pagination.total_items).toBe(before);
  });

  it('a key revoked while its webhook creation waits creates no webhook: answered 401', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to hold the creation while the revocation commits; SQLite transactions take turns');
    const account = await createAccount(t.app);
    const leaked = await createKey(t.app, account, ['read', 'write'], true);
    const db = t.app.get(DataSource);
    // The creation was authenticated; its transaction waits behind a lock on the account while the key is revoked.
    const [created] = await queueBehindRowLock(
      t.app,
      'accounts',
      account.accountId,
      [() => t.http().post('/v1/webhooks').set(leaked.auth).send({ url: 'https://exfiltrate.example.com/hook', events: ['file.uploaded'] }).then((res) => res)],
      () => t.http().delete(`/v1/api-keys/${leaked.id}`).set(account.auth).expect(200),
    );
    expect(created.status).toBe(401);
    expect(created.body.error?.code).toBe('authentication_failed');
    expect(await db.getRepository(WebhookEntity).countBy({ accountId: account.accountId })).toBe(0);
  });

  it('allows 25 webhooks per account and refuses the 26th', async () => {
    const account = await createAccount(t.app);
    for (let i = 0; i < 25; i++) await create(account, { url: `https://h.example.com/${i}`, events: ['file.uploaded'] }).expect(201);
    const refused = await create(account, { url: 'https://h.example.com/26', events: ['file.uploaded'] }).expect(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request', details: { limit: 25 } });
    const listed = await t.http().get('/v1/webhooks?per_page=10&page=3').set(account.auth).expect(200);
    expect(listed.body.pagination).toEqual({ page: 3, per_page: 10, total_items: 25, total_pages: 3 });
    expect(listed.body.data).toHaveLength(5);
  });

  it("does not keep the 26th webhook's refusal for its Idempotency-Key: once one is deleted, the retry with the same key registers", async () => {
    const account = await createAccount(t.app);
    for (let i = 0; i < 25; i++) await create(account, { url: `https://h.example.com/${i}`, events: ['file.uploaded'] }).expect(201);
    const retry = () =>
      t.http().post('/v1/webhooks').set({ ...account.auth, 'Idempotency-Key': 'hook-26' }).send({ url: 'https://h.example.com/26', events: ['file.uploaded'] });
    expect((await retry().expect(400)).body.error).toMatchObject({ code: 'invalid_request', details: { limit: 25 } });

    const oldest = (await t.http().get('/v1/webhooks?per_page=1').set(account.auth).expect(200)).body.data[0].id;
    await t.http().delete(`/v1/webhooks/${oldest}`).set(account.auth).expect(200);
    const registered = await retry();
    expect(registered.headers['idempotent-replayed']).toBeUndefined();
    expect(registered.status).toBe(201);
    expect(registered.body.data).toMatchObject({ url: 'https://h.example.com/26' });
    // Now that it acted, its answer is kept: the same webhook and secret again, and still 25 webhooks.
    const replayed = await retry().expect(201);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body.data).toEqual(registered.body.data);
    expect((await t.http().get('/v1/webhooks').set(account.auth).expect(200)).body.pagination.total_items).toBe(25);
  });

  it("answers not_found for another account's webhook on every route, changing nothing", async () => {
    const { id } = (await create(owner, { url: 'https://hooks.example.com/mine', events: ['file.uploaded'] }).expect(201)).body.data;
    const routes = [
      t.http().get(`/v1/webhooks/${id}`),
      t.http().patch(`/v1/webhooks/${id}`).send({ active: false }),
      t.http().delete(`/v1/webhooks/${id}`),
      t.http().post(`/v1/webhooks/${id}/test`),
      t.http().get(`/v1/webhooks/${id}/deliveries`),
      t.http().post(`/v1/webhooks/${id}/deliveries/dlv_x/redeliver`),
    ];
    for (const route of routes) {
      const answer = await route.set(stranger.auth).expect(404);
      expect(answer.body.error.code).toBe('not_found');
    }
    expect((await t.http().get(`/v1/webhooks/${id}`).set(owner.auth).expect(200)).body.data.active).toBe(true);
    expect((await t.http().get('/v1/webhooks').set(stranger.auth).expect(200)).body.data.map((w: { id: string }) => w.id)).not.toContain(id);
  });

  it('needs an elevated key on every webhook route', async () => {
    const plain = await createKey(t.app, owner, ['read', 'write', 'delete', 'share'], false);
    const refused = await t.http().get('/v1/webhooks').set(plain.auth).expect(403);
    expect(refused.body.error.code).toBe('permission_denied');
    await t.http().post('/v1/webhooks').set(plain.auth).send({ url: 'https://h.example.com', events: ['file.uploaded'] }).expect(403);
    const elevatedReadOnly = await createKey(t.app, owner, ['read'], true);
    await t.http().get('/v1/webhooks').set(elevatedReadOnly.auth).expect(200);
    await t.http().get('/v1/webhooks').expect(401);
  });

  it('pages the delivery log and validates its query', async () => {
    const { id } = (await create(owner, { url: 'https://hooks.example.com/log', events: ['file.uploaded'], active: false }).expect(201)).body.data;
    const empty = await t.http().get(`/v1/webhooks/${id}/deliveries`).set(owner.auth).expect(200);
    expect(empty.body).toEqual({ success: true, data: [], pagination: { page: 1, per_page: 50, total_items: 0, total_pages: 0, next_cursor: null } });
    for (const query of ['per_page=101', 'page=0', 'status=lost', 'page=1&page=2']) {
      expect((await t.http().get(`/v1/webhooks/${id}/deliveries?${query}`).set(owner.auth).expect(400)).body.error.code).toBe('invalid_request');
    }
  });
});

describe('webhook urls when private addresses are not allowed', () => {
  let t: TestApp;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started), { env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'false' } });

  it.each([
    ['http://93.184.216.34/hook', 'https'],
    ['https://127.0.0.1/hook', 'private'],
    ['https://localhost:8443/hook', 'resolve'],
    ['https://10.0.0.8/hook', 'private'],
    ['https://169.254.169.254/latest/meta-data/', 'metadata'],
    ['https://[::1]/hook', 'loopback'],
    ['https://[::ffff:192.168.0.1]/hook', 'private'],
  ])('refuses %s', async (url, mention) => {
    const refused = await t.http().post('/v1/webhooks').set(owner.auth).send({ url, events: ['file.uploaded'] }).expect(400);
    expect(refused.body.error.code).toBe('invalid_request');
    expect(refused.body.error.details.fields[0].field).toBe('url');
    expect(refused.body.error.message).toContain(mention);
  });

  it('accepts an https url on a public address', async () => {
    await t.http().post('/v1/webhooks').set(owner.auth).send({ url: 'https://93.184.216.34/hook', events: ['file.uploaded'] }).expect(201);
  });

  // An address literal is checked before connecting; a name, on the address it resolves to when connecting.
  it.each(['127.0.0.1', 'localhost'])('checks the address again when sending, so a url that now points inside (%s) is not reached', async (host) => {
    // A bare TCP listener on every local address: without the check the sender would connect (and fail the TLS
    // handshake there); with it, no connection is made at all.
    const connections: Socket[] = [];
    const listener = createServer((socket) => connections.push(socket.on('error', () => undefined)));
    await new Promise<void>((resolve) => listener.listen(0, resolve));
    try {
      const { id } = (await t.http().post('/v1/webhooks').set(owner.auth).send({ url: 'https://93.184.216.34/hook', events: ['file.uploaded'] }).expect(201)).body.data;
      // As if it had been changed to, or its DNS name re-pointed at, a loopback address after creation.
      const inside = `https://${host}:${(listener.address() as AddressInfo).port}/hook`;
      await t.app.get(DataSource).getRepository(WebhookEntity).update({ id }, { url: inside });
      await t.http().post(`/v1/webhooks/${id}/test`).set(owner.auth).expect(202);
      const [delivery] = await eventually(async () => {
        const list = (await t.http().get(`/v1/webhooks/${id}/deliveries`).set(owner.auth).expect(200)).body.data;
        return list[0]?.attempts >= 1 ? list : undefined;
      });
      expect(delivery).toMatchObject({ status: 'pending', response_status: null, error: expect.stringMatching(/not allowed/) });
      expect(connections).toHaveLength(0);
    } finally {
      for (const socket of connections) socket.destroy();
      await new Promise((resolve) => listener.close(resolve));
    }
  });
});
