import type { INestApplicationContext } from '@nestjs/common';
import { request as httpRequest } from 'node:http';
import pg from 'pg';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { idempotencyRecordKey } from '../../../src/common/idempotency/idempotency.interceptor.js';
import { loadConfig } from '../../../src/config/app-config.js';
import { REDIS } from '../../../src/infra/redis/redis.module.js';
import { SealedBox } from '../../../src/common/sealed-box.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { freePort, type ServerProcess, startServerProcess } from '../../support/processes.js';
import { createTestEnvironment, type TestApp, type TestEnvironment } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';
import { startWebhookReceiver } from '../../support/webhook-receiver.js';
import { storageOf } from '../../support/files.js';
import { openSqlite } from '../../support/sqlite.js';
import { rawExchange } from '../../support/raw-http.js';
import { eventually, sleep } from '../../support/time.js';
import { rawUpload, upload } from '../../support/uploads.js';
import { startOperatorContext } from '../../support/operator-context.js';

const MiB = 1024 * 1024;

describe('Idempotency-Key on POST, across two server processes', () => {
  let environment: TestEnvironment;
  let context: INestApplicationContext;
  let first: ServerProcess;
  let second: ServerProcess;
  let owner: TestAccount;

  beforeAll(async () => {
    environment = await createTestEnvironment();
    first = await startServerProcess(environment.env, await freePort());
    second = await startServerProcess(environment.env, await freePort());
    context = await startOperatorContext(environment.env);
    owner = await createAccount(context);
  });
  afterAll(async () => {
    await first?.stop('SIGKILL');
    await second?.stop('SIGKILL');
    await context?.close();
    await environment?.dispose();
  });

  const withKey = (key: string) => ({ ...owner.auth, 'Idempotency-Key': key });

  async function namesInRoot(): Promise<string[]> {
    const res = await request(first.baseUrl).get('/v1/files?per_page=100').set(owner.auth).expect(200);
    return res.body.data.map((f: { name: string }) => f.name).sort();
  }

  it('replays a retried upload with the same key: the same file, no "report (1).pdf"', async () => {
    const key = 'upload-report-1';
    const original = await upload(first, withKey(key), 'quarterly numbers', { name: 'report.pdf' });
    expect(original.status).toBe(200);
    expect(original.headers.get('idempotent-replayed')).toBeNull();
    const retried = await upload(second, withKey(key), 'quarterly numbers', { name: 'report.pdf' });
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.body).toEqual(original.body);
    expect(await namesInRoot()).toEqual(['report.pdf']);
    // Without a key, the same upload is a new file.
    const again = await upload(first, owner.auth, 'quarterly numbers', { name: 'report.pdf' });
    expect(again.body.data.name).toBe('report (1).pdf');
  });

  it('replays status, headers and body of a JSON POST, errors included, and keeps keys per account', async () => {
    const created = await request(first.baseUrl).post('/v1/folders').set(withKey('folder-a')).send({ name: 'Invoices' }).expect(201);
    const replayed = await request(second.baseUrl).post('/v1/folders').set(withKey('folder-a')).send({ name: 'Invoices' }).expect(201);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body).toEqual(created.body);
    const folders = await request(first.baseUrl).get('/v1/folders').set(owner.auth).expect(200);
    expect(folders.body.data.map((f: { name: string }) => f.name)).toEqual(['Invoices']);

    const missing = await request(first.baseUrl).post('/v1/files/file_nothere/restore').set(withKey('restore-a')).expect(404);
    const missingAgain = await request(second.baseUrl).post('/v1/files/file_nothere/restore').set(withKey('restore-a')).expect(404);
    expect(missingAgain.body).toEqual(missing.body);

    // Another account's identical key is its own.
    const other = await createAccount(context);
    const theirs = await request(first.baseUrl).post('/v1/folders').set({ ...other.auth, 'Idempotency-Key': 'folder-a' }).send({ name: 'Invoices' }).expect(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.body.data.id).not.toBe(created.body.data.id);
  });

  it('keeps a stored answer sealed in Redis: a retried API key creation replays its secret, which Redis holds only encrypted', async () => {
    const key = 'new-api-key';
    const created = await request(first.baseUrl).post('/v1/api-keys').set(withKey(key)).send({ name: 'ci', scopes: ['read'] }).expect(201);
    const secret: string = created.body.data.api_key;
    const replayed = await request(second.baseUrl).post('/v1/api-keys').set(withKey(key)).send({ name: 'ci', scopes: ['read'] }).expect(201);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body.data.api_key).toBe(secret);
    const stored = await context.get<Redis>(REDIS).get(idempotencyRecordKey(loadConfig(environment.env).redisKeyPrefix, owner, key));
    expect(stored).toContain('"complete"');
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain(created.body.data.id);
  });

  it('answers 422 idempotency_key_reused for the same key on a different request, changing nothing', async () => {
    await request(first.baseUrl).post('/v1/folders').set(withKey('folder-b')).send({ name: 'Receipts' }).expect(201);
    const reused = await request(second.baseUrl).post('/v1/folders').set(withKey('folder-b')).send({ name: 'Other' }).expect(422);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    const elsewhere = await request(second.baseUrl).post('/v1/files/bulk-delete').set(withKey('folder-b')).send({ file_ids: ['file_x'] }).expect(422);
    expect(elsewhere.body.error.code).toBe('idempotency_key_reused');
    const folders = await request(first.baseUrl).get('/v1/folders?per_page=100').set(owner.auth).expect(200);
    expect(folders.body.data.map((f: { name: string }) => f.name)).not.toContain('Other');
  });

  it('refuses a bad key with 400: empty, longer than 255 characters, with a control character or a byte outside ASCII, or sent twice', async () => {
    for (const key of ['', 'k'.repeat(256), 'tab\there', 'café']) {
      const res = await request(first.baseUrl).post('/v1/folders').set(withKey(key)).send({ name: `bad-${key.length}` }).expect(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details.fields[0].field).toBe('Idempotency-Key');
    }
    // Two Idempotency-Key headers (a proxy adding its own): Node would join them into one key, "one, two".
    const host = new URL(first.baseUrl).host;
    const body = JSON.stringify({ name: 'bad-two-keys' });
    const twice = await rawExchange(
      first.baseUrl,
      `POST /v1/folders HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${owner.auth.Authorization}\r\nIdempotency-Key: one\r\nIdempotency-Key: two\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(twice.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(twice).toContain('"field":"Idempotency-Key"');
    await request(first.baseUrl).post('/v1/folders').set(withKey('k'.repeat(255))).send({ name: 'longest key' }).expect(201);
    const folders = await request(first.baseUrl).get('/v1/folders?per_page=100').set(owner.auth).expect(200);
    expect(folders.body.data.map((f: { name: string }) => f.name).filter((n: string) => n.startsWith('bad-'))).toEqual([]);
  });

  /** Holds writes to the folders table from outside the service until the answer is called; a folder creation waits meanwhile. */
  async function holdWritesToFolders(): Promise<() => Promise<void>> {
    const url = environment.env.DATABASE_URL;
    if (url.startsWith('sqlite:')) {
      const db = openSqlite(url.slice('sqlite:'.length));
      db.exec('BEGIN IMMEDIATE');
      return async () => {
        db.exec('COMMIT');
        db.close();
      };
    }
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query('BEGIN');
    await client.query('LOCK TABLE folders IN SHARE MODE');
    return async () => {
      await client.query('COMMIT');
      await client.end();
    };
  }

  it('stores the answer of a request whose client went away while it ran: the retry replays it, and it acts once', async () => {
    const key = 'folder-dropped';
    const redis = context.get<Redis>(REDIS);
    const record = idempotencyRecordKey(loadConfig(environment.env).redisKeyPrefix, owner, key);
    const release = await holdWritesToFolders();
    try {
      const sent = httpRequest(`${first.baseUrl}/v1/folders`, { method: 'POST', headers: { ...withKey(key), 'Content-Type': 'application/json' } });
      sent.on('error', () => undefined);
      sent.end(JSON.stringify({ name: 'Dropped' }));
      await eventually(async () => (await redis.get(record))?.includes('"running"'), 30_000, 'the request to hold the key');
      // The client gives up (a timeout) while the folder waits to be written.
      sent.destroy();
      await sleep(300);
    } finally {
      await release();
    }
    await eventually(async () => (await redis.get(record))?.includes('"complete"'), 30_000, 'the answer to be stored');
    const retry = await request(second.baseUrl).post('/v1/folders').set(withKey(key)).send({ name: 'Dropped' }).expect(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    const folders = await request(first.baseUrl).get('/v1/folders?per_page=100').set(owner.auth).expect(200);
    const dropped = folders.body.data.filter((f: { name: string }) => f.name.startsWith('Dropped'));
    expect(dropped.map((f: { id: string }) => f.id)).toEqual([retry.body.data.id]);
  });

  it('frees the key of an upload whose client went away mid-body: the retry uploads, and nothing was stored twice', async () => {
    const key = 'upload-cut-short';
    const redis = context.get<Redis>(REDIS);
    const record = idempotencyRecordKey(loadConfig(environment.env).redisKeyPrefix, owner, key);
    // Chunked both times (the same request), the first one cut off once it holds the key.
    let hangUp: () => void = () => undefined;
    const cut = rawUpload(first, withKey(key), { fileSize: 4 * MiB, holdAfter: MiB, filename: 'cut.bin', onHold: (hang) => (hangUp = hang) });
    await eventually(async () => (await redis.get(record))?.includes('"running"'), 30_000, 'the upload to hold the key');
    hangUp();
    expect((await cut).outcome).toBe('cut-off');
    await eventually(async () => (await redis.get(record)) === null, 30_000, 'the key to be freed');
    const retried = await rawUpload(second, withKey(key), { fileSize: 4 * MiB, filename: 'cut.bin' });
    expect(retried.status).toBe(200);
    expect((await namesInRoot()).filter((name) => name.startsWith('cut'))).toEqual(['cut.bin']);
  });

  it('frees the key and the quota of a tus creation whose first bytes were cut off: the retry creates the upload afresh', async () => {
    const key = 'tus-create-cut';
    const redis = context.get<Redis>(REDIS);
    const record = idempotencyRecordKey(loadConfig(environment.env).redisKeyPrefix, owner, key);
    const content = Buffer.alloc(3 * MiB, 7);
    const headers = {
      ...withKey(key),
      'Tus-Resumable': '1.0.0',
      'Upload-Length': String(content.length),
      'Upload-Metadata': `filename ${Buffer.from('cut-creation.bin').toString('base64')}`,
      'Content-Type': 'application/offset+octet-stream',
    };
    const before = await storageOf(context, owner.accountId);
    // The creation carries its first bytes, and its client hangs up after 1 MiB.
    const cut = httpRequest(`${first.baseUrl}/v1/uploads`, { method: 'POST', headers: { ...headers, 'Transfer-Encoding': 'chunked' } });
    cut.on('error', () => undefined);
    cut.write(content.subarray(0, MiB));
    await eventually(async () => (await redis.get(record))?.includes('"running"'), 30_000, 'the creation to hold the key');
    await sleep(300);
    cut.destroy();
    await eventually(async () => (await redis.get(record)) === null, 30_000, 'the key to be freed');
    await eventually(async () => (await storageOf(context, owner.accountId)).reserved === before.reserved, 10_000, 'the reservation to be given back');

    const retried = await fetch(`${second.baseUrl}/v1/uploads`, { method: 'POST', headers, body: content });
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.headers.get('x-file-id')).toMatch(/^file_/);
    expect((await storageOf(context, owner.accountId)).used - before.used).toBe(content.length);
    expect((await storageOf(context, owner.accountId)).reserved).toBe(before.reserved);
  });

  it('replays a tus creation retried with the same key: the same upload, one reservation', async () => {
    const create = (base: string, key: string, length: number) =>
      fetch(`${base}/v1/uploads`, {
        method: 'POST',
        headers: { ...withKey(key), 'Tus-Resumable': '1.0.0', 'Upload-Length': String(length), 'Upload-Metadata': `filename ${Buffer.from('movie.mp4').toString('base64')}` },
      });
    const before = await storageOf(context, owner.accountId);
    const created = await create(first.baseUrl, 'tus-create', 5000);
    expect(created.status).toBe(201);
    const retried = await create(second.baseUrl, 'tus-create', 5000);
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.headers.get('location')).toBe(created.headers.get('location'));
    expect(retried.headers.get('tus-resumable')).toBe('1.0.0');
    expect((await create(second.baseUrl, 'tus-create', 6000)).status).toBe(422);
    expect((await storageOf(context, owner.accountId)).reserved - before.reserved).toBe(5000);
  });

  it('answers 409 idempotency_key_in_use to a retry on the other process while the first upload still runs', async () => {
    const key = 'slow-upload';
    const running = rawUpload(first, withKey(key), { fileSize: 4 * MiB, declaredLength: 4 * MiB + 400, holdAfter: MiB, filename: 'slow.bin' });
    // Only once the first process holds the key is the retry a retry: sent earlier (as on a loaded machine), it
    // would take the key itself and upload.
    const redis = context.get<Redis>(REDIS);
    const record = idempotencyRecordKey(loadConfig(environment.env).redisKeyPrefix, owner, key);
    await eventually(async () => (await redis.get(record))?.includes('"running"'), 30_000, 'the first upload to hold the key');
    // The same request again on the other process (same multipart length), answered before its body is read.
    const retry = await rawUpload(second, withKey(key), { fileSize: 4 * MiB, declaredLength: 4 * MiB + 400, filename: 'slow.bin' });
    expect(retry.status).toBe(409);
    expect(retry.body.error.code).toBe('idempotency_key_in_use');
    // The first process dies mid-upload: its lock lapses and the key is usable again.
    await first.stop('SIGKILL');
    await running;
    const after = await eventually(async () => {
      const res = await upload(second, withKey(key), 'after the crash', { name: 'slow.bin' });
      return res.status === 200 ? res : null;
    }, 30_000, 'the key to be usable after the crash');
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    first = await startServerProcess(environment.env, await freePort());
    // Hang guard: its two waits and a restart of the killed process add up to more than the default 60 s on a loaded machine.
  }, 180_000);
});

describe('Idempotency-Key in one server process', () => {
  let t: TestApp;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started));

  it('keeps the key on a route that is no tus upload even when X-HTTP-Method-Override is sent: the retry is replayed', async () => {
    const create = () => t.http().post('/v1/folders').set({ ...owner.auth, 'Idempotency-Key': 'override-folder', 'X-HTTP-Method-Override': 'PATCH' }).send({ name: 'Overridden' });
    const first = await create().expect(201);
    const retried = await create().expect(201);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.body.data.id).toBe(first.body.data.id);
    const folders = await t.http().get('/v1/folders?per_page=100').set(owner.auth).expect(200);
    expect(folders.body.data.filter((f: { name: string }) => f.name.startsWith('Overridden')).map((f: { id: string }) => f.id)).toEqual([first.body.data.id]);

    // On an upload's URL the header makes the POST a tus HEAD or PATCH, which the key does not apply to.
    const tus = { ...owner.auth, 'Tus-Resumable': '1.0.0', 'Idempotency-Key': 'override-tus' };
    const created = await fetch(`${t.baseUrl}/v1/uploads`, { method: 'POST', headers: { ...owner.auth, 'Tus-Resumable': '1.0.0', 'Upload-Length': '3', 'Upload-Metadata': `filename ${Buffer.from('abc.txt').toString('base64')}` } });
    expect(created.status, await created.clone().text()).toBe(201);
    const location = new URL(created.headers.get('location')!, t.baseUrl).toString();
    const head = await fetch(location, { method: 'POST', headers: { ...tus, 'X-HTTP-Method-Override': 'HEAD' } });
    expect(head.status).toBe(200);
    const patch = await fetch(location, {
      method: 'POST',
      headers: { ...tus, 'X-HTTP-Method-Override': 'PATCH', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
      body: 'abc',
    });
    expect(patch.status).toBe(204);
    expect(patch.headers.get('upload-offset')).toBe('3');
  });

  it('ignores the header on GET, PATCH and DELETE, which are idempotent already: a repeated DELETE answers 404, not a replay', async () => {
    const folder = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Ignored key' }).expect(201)).body.data;
    // Not even checked there: a key no POST would take changes nothing.
    const renamed = await t.http().patch(`/v1/folders/${folder.id}`).set({ ...owner.auth, 'Idempotency-Key': 'k'.repeat(300) }).send({ name: 'Renamed' });
    expect(renamed.status).toBe(200);
    expect(renamed.headers['idempotent-replayed']).toBeUndefined();
    const listed = await t.http().get('/v1/folders?per_page=100').set({ ...owner.auth, 'Idempotency-Key': 'k'.repeat(300) });
    expect(listed.status).toBe(200);

    const deleteIt = () => t.http().delete(`/v1/folders/${folder.id}`).set({ ...owner.auth, 'Idempotency-Key': 'delete-folder' });
    expect((await deleteIt()).status).toBe(200);
    const repeated = await deleteIt();
    expect(repeated.status).toBe(404);
    expect(repeated.body.error.code).toBe('not_found');
    expect(repeated.headers['idempotent-replayed']).toBeUndefined();
  });

  it('answers a retry whose stored answer can no longer be opened (SECRETS_ENCRYPTION_KEY changed) with 422, not 503 for a day', async () => {
    const create = () => t.http().post('/v1/folders').set({ ...owner.auth, 'Idempotency-Key': 'sealed-elsewhere' }).send({ name: 'Sealed' });
    await create().expect(201);
    const redis = t.app.get<Redis>(REDIS);
    const record = idempotencyRecordKey(t.config.redisKeyPrefix, owner, 'sealed-elsewhere');
    const stored = JSON.parse((await redis.get(record))!) as { sealed: string };
    // The answer as a server with another SECRETS_ENCRYPTION_KEY sealed it.
    const foreign = new SealedBox('another secrets encryption key', 'idempotent-answers').seal(JSON.stringify({ status: 201, headers: {}, body: {} }));
    await redis.set(record, JSON.stringify({ ...stored, sealed: foreign }), 'KEEPTTL');
    const retried = await create();
    expect(retried.status).toBe(422);
    expect(retried.body.error).toMatchObject({ code: 'idempotency_key_reused', message: expect.stringContaining('new Idempotency-Key') });
    const folders = await t.http().get('/v1/folders?per_page=100').set(owner.auth).expect(200);
    expect(folders.body.data.filter((f: { name: string }) => f.name.startsWith('Sealed'))).toHaveLength(1);
  });

  it('does not keep a 409 conflict: the retry with the same key, once the conflict is over, acts', async () => {
    // The receiver holds the test delivery's answer for a moment, so the delivery is still pending.
    const receiver = await startWebhookReceiver(() => ({ status: 200, delayMs: 1500 }));
    try {
      const webhook = (await t.http().post('/v1/webhooks').set(owner.auth).send({ url: `${receiver.url}/hook`, events: ['file.uploaded'] }).expect(201)).body.data;
      const delivery = (await t.http().post(`/v1/webhooks/${webhook.id}/test`).set(owner.auth).send({}).expect(202)).body.data;
      const redeliver = () => t.http().post(`/v1/webhooks/${webhook.id}/deliveries/${delivery.id}/redeliver`).set({ ...owner.auth, 'Idempotency-Key': 'redeliver-once' });
      const early = await redeliver();
      expect(early.status).toBe(409);
      expect(early.body.error.code).toBe('conflict');

      await eventually(async () => {
        const log = await t.http().get(`/v1/webhooks/${webhook.id}/deliveries`).set(owner.auth).expect(200);
        return log.body.data.find((d: { id: string }) => d.id === delivery.id)?.status === 'succeeded';
      }, 20_000, 'the first delivery to succeed');
      const retried = await redeliver();
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
      expect(retried.status).toBe(202);
      expect(retried.body.data).toMatchObject({ id: delivery.id, status: 'pending' });
      // Now that it acted, its answer is kept and replayed.
      const replayed = await redeliver().expect(202);
      expect(replayed.headers['idempotent-replayed']).toBe('true');
      await receiver.waitFor((received) => received.length === 2, 20_000, 'the redelivery');
    } finally {
      await receiver.close();
    }
  });

  it('does not keep a 413 storage_exceeded: once space is freed, the retry with the same key uploads', async () => {
    const small = await createAccount(t.app, { storageLimit: 100 });
    const keyed = { ...small.auth, 'Idempotency-Key': 'upload-when-there-is-room' };
    const first = await upload(t, small.auth, 'x'.repeat(60), { name: 'first.txt' });
    expect(first.status).toBe(200);
    const refused = await upload(t, keyed, 'y'.repeat(60), { name: 'second.txt' });
    expect(refused.status).toBe(413);
    expect(refused.body.error.code).toBe('storage_exceeded');
    await t.http().delete(`/v1/files/${first.body.data.id}?permanent=true`).set(small.auth).expect(200);
    const retried = await upload(t, keyed, 'y'.repeat(60), { name: 'second.txt' });
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.status).toBe(200);
    expect(retried.body.data).toMatchObject({ name: 'second.txt', size: 60 });
  });
});
