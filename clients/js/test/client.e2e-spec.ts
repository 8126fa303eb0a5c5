import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../../test/support/accounts.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { pngImage } from '../../../test/support/media.js';
import { eventually, sleep } from '../../../test/support/time.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../../test/support/webhook-receiver.js';
import { AuthenticationError, FileStorage, FileTooLargeError, InvalidRequestError, NotFoundError, RateLimitError, verifyStandardWebhook, verifyWebhookSignature } from '../src/index.js';

const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of Readable.fromWeb(stream as import('node:stream/web').ReadableStream<Uint8Array>)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('the JavaScript client against a live server', () => {
  let t: TestApp;
  let client: FileStorage;
  let receiver: WebhookReceiver;
  let apiKey: string;
  const dir = mkdtempSync(join(tmpdir(), 'fss-js-client-'));

  beforeAll(async () => {
    t = await startTestApp();
    receiver = await startWebhookReceiver();
    const account = await createAccount(t.app);
    apiKey = account.apiKey;
    client = new FileStorage({ apiKey: account.apiKey, baseUrl: t.baseUrl, resumableThresholdBytes: 1024 * 1024, resumableChunkBytes: 256 * 1024 });
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('uploads from a path, a Buffer, a Node stream and a Blob, reporting progress, with the right MD5', async () => {
    const bytes = randomBytes(200_000);
    const path = join(dir, 'report.bin');
    writeFileSync(path, bytes);
    const progress: number[] = [];
    const fromPath = await client.files.upload(path, { onProgress: ({ loaded }) => progress.push(loaded) });
    expect(fromPath).toMatchObject({ name: 'report.bin', size: bytes.length, md5_hash: md5(bytes) });
    expect(progress.at(-1)).toBe(bytes.length);
    const fromBuffer = await client.files.upload(bytes, { name: 'buffer.bin' });
    expect(fromBuffer.md5_hash).toBe(md5(bytes));
    const fromStream = await client.files.upload(Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]), { name: 'stream.bin' });
    expect(fromStream).toMatchObject({ size: bytes.length, md5_hash: md5(bytes) });
    const fromBlob = await client.files.upload(new Blob([bytes]), { name: 'blob.bin' });
    expect(fromBlob.md5_hash).toBe(md5(bytes));
  });

  it('uploads a file above the threshold through tus, in chunks, and downloads it as a stream and to a path', async () => {
    const bytes = randomBytes(1024 * 1024 + 12_345);
    const progress: number[] = [];
    const tusClient = new FileStorage({ apiKey, baseUrl: t.baseUrl, resumableThresholdBytes: 1024 * 1024, resumableChunkBytes: 256 * 1024 });
    const file = await tusClient.files.upload(new Blob([bytes]), { name: 'big.bin', onProgress: ({ loaded }) => progress.push(loaded) });
    expect(file).toMatchObject({ name: 'big.bin', size: bytes.length });
    expect(progress.length).toBeGreaterThan(4);
    expect(progress.at(-1)).toBe(bytes.length);
    expect(md5(await readAll(await client.files.download(file.id)))).toBe(md5(bytes));
    const target = join(dir, 'downloaded.bin');
    await client.files.downloadTo(file.id, target);
    expect(md5(readFileSync(target))).toBe(md5(bytes));
  });

  it('an upload sent again with its idempotencyKey (a restarted process) stores the file once, in one request or resumable', async () => {
    const bytes = randomBytes(300_000);
    for (const resumableThresholdBytes of [Number.MAX_SAFE_INTEGER, 1]) {
      const folder = await client.folders.create({ name: `idempotent upload ${resumableThresholdBytes}` });
      const options = { name: 'once.bin', folderId: folder.id, idempotencyKey: randomUUID(), resumableThresholdBytes };
      const first = await client.files.upload(bytes, options);
      const again = await client.files.upload(bytes, options);
      expect(again.id).toBe(first.id);
      expect((await client.files.list({ folder_id: folder.id })).data.map((file) => file.name)).toEqual(['once.bin']);
    }
  });

  it("downloads an image's thumbnail once it is made, and raises NotFoundError for a file without one", async () => {
    const image = await client.files.upload(await pngImage(640, 480), { name: 'photo.png' });
    const text = await client.files.upload(Buffer.from('no pixels here'), { name: 'notes.txt' });
    await eventually(async () => (await client.files.get(image.id)).thumbnail_url, 20_000, 'the thumbnail');
    const thumbnail = await readAll(await client.files.thumbnail(image.id));
    expect(thumbnail.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(thumbnail.subarray(8, 12).toString('latin1')).toBe('WEBP');
    const target = join(dir, 'thumbnail.webp');
    await client.files.thumbnailTo(image.id, target);
    expect(readFileSync(target).equals(thumbnail)).toBe(true);
    await expect(client.files.thumbnail(text.id)).rejects.toMatchObject({ name: 'NotFoundError', status: 404, message: expect.stringContaining('no thumbnail') });
    await expect(client.files.thumbnailTo(text.id, join(dir, 'none.webp'))).rejects.toBeInstanceOf(NotFoundError);
  });

  it('resumes an upload by its URL from another client after the first stopped partway, and aborts one', async () => {
    const bytes = randomBytes(1024 * 1024 + 777);
    const path = join(dir, 'resumed.bin');
    writeFileSync(path, bytes);
    const first = new FileStorage({ apiKey, baseUrl: t.baseUrl, resumableChunkBytes: 256 * 1024 });
    const upload = await first.uploads.create(path, { name: 'resumed.bin' });
    expect(upload).toMatchObject({ offset: 0, size: bytes.length, url: expect.stringMatching(/\/v1\/uploads\//) });
    // The first process stops after two chunks.
    const stop = new AbortController();
    await expect(upload.send({ signal: stop.signal, onProgress: ({ loaded }) => loaded >= 512 * 1024 && stop.abort() })).rejects.toThrow();

    const second = new FileStorage({ apiKey, baseUrl: t.baseUrl, resumableChunkBytes: 256 * 1024 });
    const resumed = await second.uploads.resume(upload.url, path);
    expect(resumed.offset).toBe(512 * 1024);
    const sent: number[] = [];
    const file = await resumed.send({ onProgress: ({ loaded }) => sent.push(loaded) });
    expect(sent[0]).toBe(768 * 1024);
    expect(file).toMatchObject({ name: 'resumed.bin', size: bytes.length, md5_hash: md5(bytes) });
    // Resuming a finished upload sends nothing more and answers the same file.
    expect((await (await second.uploads.resume(upload.url, path)).send()).id).toBe(file.id);
    await expect(second.uploads.resume(upload.url, Buffer.alloc(10))).rejects.toThrow(/is 1049353 bytes long/);

    const abandoned = await first.uploads.create(Buffer.from('not wanted'), { name: 'abandoned.bin' });
    await abandoned.abort();
    await expect(second.uploads.resume(abandoned.url, Buffer.from('not wanted'))).rejects.toBeInstanceOf(NotFoundError);
  });

  it('iterates a listing by cursor: files added and deleted meanwhile neither repeat nor skip the others', async () => {
    const folder = await client.folders.create({ name: 'Busy while iterating' });
    const originals: string[] = [];
    for (let i = 0; i < 6; i++) originals.push((await client.files.upload(Buffer.from(`original ${i}`), { name: `o${i}.txt`, folderId: folder.id })).name);
    const seen: string[] = [];
    for await (const file of client.files.listAll({ folder_id: folder.id, per_page: 2, sort: 'created_desc' })) {
      seen.push(file.name);
      if (seen.length === 1) {
        // Newer files land before the iterator's position, and one already seen leaves: page numbers would shift.
        await client.files.upload(Buffer.from('late'), { name: 'late-1.txt', folderId: folder.id });
        await client.files.upload(Buffer.from('late'), { name: 'late-2.txt', folderId: folder.id });
        const [firstSeen] = (await client.files.list({ folder_id: folder.id, search: file.name })).data;
        await client.files.delete(firstSeen.id);
      }
    }
    expect(seen).toEqual([...originals].reverse());
    // The first page may be a page number; the walk goes on by cursor from there.
    const fromPage2: string[] = [];
    for await (const f of client.folders.listAll({ page: 2, per_page: 1, sort: 'name_asc' })) fromPage2.push(f.name);
    const everyFolder = (await client.folders.list({ per_page: 100, sort: 'name_asc' })).data.map((f) => f.name);
    expect(fromPage2).toEqual(everyFolder.slice(1));
    const page = await client.files.list({ folder_id: folder.id, per_page: 2 });
    expect(page.pagination.next_cursor).toEqual(expect.any(String));
  });

  it('lists one page and iterates every page, and round-trips through the trash', async () => {
    const folder = await client.folders.create({ name: 'Paged' });
    expect(await client.folders.get(folder.id)).toEqual(folder);
    for (let i = 0; i < 5; i++) await client.files.upload(Buffer.from(`file ${i}`), { name: `f${i}.txt`, folderId: folder.id });
    const page = await client.files.list({ folder_id: folder.id, per_page: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.pagination).toMatchObject({ total_items: 5, total_pages: 3 });
    const names: string[] = [];
    for await (const file of client.files.listAll({ folder_id: folder.id, per_page: 2, sort: 'name_asc' })) names.push(file.name);
    expect(names).toEqual(['f0.txt', 'f1.txt', 'f2.txt', 'f3.txt', 'f4.txt']);

    const first = page.data[0];
    await client.files.delete(first.id);
    const trashed: string[] = [];
    for await (const item of client.trash.listAll()) trashed.push(item.id);
    expect(trashed).toContain(first.id);
    await client.files.restore(first.id);
    expect((await client.files.get(first.id)).id).toBe(first.id);
    const bulk = await client.files.bulkDelete([first.id, 'file_missing']);
    expect(bulk).toMatchObject({ deleted: [first.id], failed_count: 1 });
    await client.trash.empty();
    await expect(client.files.get(first.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('shares a file behind a password and fetches it as a visitor', async () => {
    const file = await client.files.upload(Buffer.from('shared secret'), { name: 'shared.txt' });
    const share = await client.shares.create({ file_id: file.id, password: 'hunter22' });
    await expect(client.shares.open(share.url)).rejects.toMatchObject({ status: 401, code: 'password_required' });
    expect((await client.shares.open(share.url, { password: 'hunter22' })).file).toMatchObject({ name: 'shared.txt' });
    expect((await readAll(await client.shares.download(share.url, { password: 'hunter22' }))).toString()).toBe('shared secret');
    const copy = join(dir, 'shared-copy.txt');
    await client.shares.downloadTo(share.url, copy, { password: 'hunter22' });
    expect(readFileSync(copy, 'utf8')).toBe('shared secret');
    const refused = join(dir, 'shared-refused.txt');
    await expect(client.shares.downloadTo(share.url, refused, { password: 'wrong' })).rejects.toMatchObject({ status: 401, code: 'password_required' });
    expect(existsSync(refused)).toBe(false);
    const fetched = await client.shares.get(share.id);
    expect(fetched).toMatchObject({ id: share.id, url: share.url, file_id: file.id, password_protected: true, active: true, revoked_at: null });
    const [listed] = (await client.shares.list({ file_id: file.id })).data;
    expect(fetched).toEqual(listed);
    // Typed as what the list answers: the status fields need no cast.
    expect([listed.active, typeof listed.access_count]).toEqual([true, 'number']);
    const revoked = await client.shares.revoke(share.id);
    expect(await client.shares.get(share.id)).toMatchObject({ id: share.id, active: false, revoked_at: revoked.revoked_at });
    await expect(client.shares.get('shr_00000000000000000000000000000000')).rejects.toMatchObject({ name: 'NotFoundError', status: 404, code: 'not_found' });
  });

  it('downloads a byte range of a file and of a shared file: start to end inclusive, to the end, or the last bytes', async () => {
    const bytes = randomBytes(100_000);
    const file = await client.files.upload(bytes, { name: 'ranged.bin' });
    expect(await readAll(await client.files.download(file.id, { start: 1_000, end: 1_999 }))).toEqual(bytes.subarray(1_000, 2_000));
    expect(await readAll(await client.files.download(file.id, { start: 99_000 }))).toEqual(bytes.subarray(99_000));
    expect(await readAll(await client.files.download(file.id, { start: -10 }))).toEqual(bytes.subarray(-10));
    const copy = join(dir, 'ranged-copy.bin');
    await client.files.downloadTo(file.id, copy, { start: 5, end: 9 });
    expect(readFileSync(copy)).toEqual(bytes.subarray(5, 10));
    await expect(client.files.download(file.id, { start: 200_000 })).rejects.toMatchObject({ name: 'InvalidRequestError', status: 416 });
    await expect(client.files.download(file.id, { start: 10, end: 5 })).rejects.toMatchObject({ name: 'InvalidRequestError', details: { fields: [{ field: 'range' }] } });
    const share = await client.shares.create({ file_id: file.id });
    expect(await readAll(await client.shares.download(share.url, { start: 50_000, end: 50_099 }))).toEqual(bytes.subarray(50_000, 50_100));
  });

  it.each(['', '.', '..', 'a/b', 'file?x=1', 'file#top'])('refuses the id %j before any request, naming the field, instead of reaching another route', async (bad) => {
    // Nothing listens at this address: a request sent would fail as a ConnectionError, not as the client's own refusal.
    const offline = new FileStorage({ apiKey, baseUrl: 'http://127.0.0.1:9', maxRetries: 0 });
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['file_id', () => offline.files.get(bad)],
      ['file_id', () => offline.files.download(bad)],
      ['folder_id', () => offline.folders.delete(bad)],
      ['share_id', () => offline.shares.get(bad)],
      ['webhook_id', () => offline.webhooks.deliveries(bad)],
      ['delivery_id', () => offline.webhooks.redeliver('wh_0', bad)],
      ['key_id', () => offline.apiKeys.revoke(bad)],
    ];
    for (const [field, call] of calls) {
      await expect(call()).rejects.toMatchObject({ name: 'InvalidRequestError', code: 'invalid_request', details: { fields: [{ field }] } });
    }
    if (['', '.', '..'].includes(bad)) {
      await expect(offline.shares.open(bad)).rejects.toMatchObject({ name: 'InvalidRequestError', details: { fields: [{ field: 'url_or_token' }] } });
    }
  });

  it('sends a pasted share token with / ? or # in it percent-encoded, as one token the server does not know', async () => {
    await expect(client.shares.open('no/such?token#here')).rejects.toMatchObject({ name: 'NotFoundError', status: 404 });
  });

  it('opens and downloads a share whose password goes beyond Latin-1', async () => {
    const file = await client.files.upload(Buffer.from('behind a password'), { name: 'guarded.txt' });
    for (const password of ['pässwörd', 'пароль 密码 😀']) {
      const share = await client.shares.create({ file_id: file.id, password });
      expect((await client.shares.open(share.url, { password })).file.name).toBe('guarded.txt');
      expect((await readAll(await client.shares.download(share.url, { password }))).toString()).toBe('behind a password');
    }
  });

  it('receives a test delivery whose signature verifyWebhookSignature accepts', async () => {
    const webhook = await client.webhooks.create({ url: receiver.url, events: ['file.uploaded'], secret: 'a-long-webhook-secret' });
    const delivery = await client.webhooks.test(webhook.id);
    const [received] = await receiver.waitFor((all) => all.length > 0);
    expect(await verifyWebhookSignature(received.rawBody, received.headers as Record<string, string>, 'a-long-webhook-secret')).toBe(true);
    expect(await verifyWebhookSignature(received.rawBody + ' ', received.headers as Record<string, string>, 'a-long-webhook-secret')).toBe(false);
    expect(await verifyWebhookSignature(received.rawBody, received.headers as Record<string, string>, 'another-secret')).toBe(false);
    const deliveries = await client.webhooks.deliveries(webhook.id);
    expect(deliveries.data.map((d) => d.id)).toContain(delivery.id);
  });

  it('rotates a webhook secret; verifyStandardWebhook accepts the old and the new secret during the grace period', async () => {
    const webhook = await client.webhooks.create({ url: `${receiver.url}/rotating`, events: ['file.uploaded'] });
    const rotated = await client.webhooks.rotateSecret(webhook.id, { expiresIn: 3600 });
    expect(rotated).toMatchObject({ id: webhook.id, secret: expect.stringMatching(/^whsec_/), previous_secret_expires_at: expect.any(String) });
    expect(Date.parse(rotated.previous_secret_expires_at!) - Date.parse(rotated.rotated_at)).toBe(3_600_000);
    expect((await client.webhooks.get(webhook.id)).previous_secret_expires_at).toBe(rotated.previous_secret_expires_at);

    await client.webhooks.test(webhook.id);
    const got = (await receiver.waitFor((all) => all.some((d) => d.path === '/hooks/rotating'))).find((d) => d.path === '/hooks/rotating')!;
    const headers = got.headers as Record<string, string>;
    expect(await verifyStandardWebhook(got.rawBody, headers, webhook.secret)).toBe(true);
    expect(await verifyStandardWebhook(got.rawBody, headers, rotated.secret)).toBe(true);
    expect(await verifyStandardWebhook(got.rawBody, headers, ['whsec_' + Buffer.alloc(32, 9).toString('base64'), rotated.secret])).toBe(true);
    expect(await verifyStandardWebhook(got.rawBody, headers, 'whsec_' + Buffer.alloc(32, 9).toString('base64'))).toBe(false);
    expect(await verifyStandardWebhook(got.rawBody + ' ', headers, rotated.secret)).toBe(false);
    expect(await verifyStandardWebhook(got.rawBody, { ...headers, 'webhook-id': 'evt_other' }, rotated.secret)).toBe(false);
    // A delivery captured and replayed more than five minutes later is refused.
    const later = new Date((Number(headers['webhook-timestamp']) + 301) * 1000);
    expect(await verifyStandardWebhook(got.rawBody, headers, rotated.secret, { now: later })).toBe(false);
    // X-Service-Signature uses the new secret only.
    expect(await verifyWebhookSignature(got.rawBody, headers, rotated.secret)).toBe(true);
    expect(await verifyWebhookSignature(got.rawBody, headers, webhook.secret)).toBe(false);

    const ended = await client.webhooks.rotateSecret(webhook.id, { expiresIn: 0 });
    expect(ended.previous_secret_expires_at).toBeNull();
  });

  it('verifyStandardWebhook keys a secret chosen at creation by its UTF-8 bytes', async () => {
    const secret = 'a-long-wébhook-secret';
    const webhook = await client.webhooks.create({ url: `${receiver.url}/chosen`, events: ['file.uploaded'], secret });
    await client.webhooks.test(webhook.id);
    const got = (await receiver.waitFor((all) => all.some((d) => d.path === '/hooks/chosen'))).find((d) => d.path === '/hooks/chosen')!;
    expect(await verifyStandardWebhook(got.rawBody, got.headers as Record<string, string>, secret)).toBe(true);
    expect(await verifyStandardWebhook(new TextEncoder().encode(got.rawBody), got.headers as Record<string, string>, secret)).toBe(true);
    expect(await verifyStandardWebhook(got.rawBody, got.headers as Record<string, string>, 'a-long-webhook-secret')).toBe(false);
  });

  it('manages api keys and reads user info', async () => {
    const created = await client.apiKeys.create({ name: 'reader', scopes: ['read'] });
    const reader = new FileStorage({ apiKey: created.api_key, baseUrl: t.baseUrl });
    expect((await reader.user.info()).key).toMatchObject({ scopes: ['read'] });
    await client.apiKeys.revoke(created.id);
    await expect(reader.user.info()).rejects.toBeInstanceOf(AuthenticationError);
  });

  it('raises typed errors: 404, 413 with its details, 401', async () => {
    const error = await client.files.get('file_nope').catch((e) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, code: 'not_found', requestId: expect.any(String) });
    const free = await createAccount(t.app, { plan: 'free' });
    const freeClient = new FileStorage({ apiKey: free.apiKey, baseUrl: t.baseUrl });
    const tooLarge = await freeClient.files.upload(new Blob([new Uint8Array(100 * 1024 * 1024 + 1)]), { name: 'huge.bin' }).catch((e) => e);
    expect(tooLarge).toBeInstanceOf(FileTooLargeError);
    expect(tooLarge).toMatchObject({ status: 413, maxSize: 100 * 1024 * 1024, plan: 'free' });
    await expect(new FileStorage({ apiKey: 'wrong', baseUrl: t.baseUrl }).user.info()).rejects.toBeInstanceOf(AuthenticationError);
  });

  it('refuses a header value HTTP cannot carry before sending, without retrying it as a connection error', async () => {
    const started = Date.now();
    const refused = await client.folders.create({ name: 'Never made' }, { idempotencyKey: 'clé 😀' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect((refused as InvalidRequestError).message).toContain('Idempotency-Key');
    // Refused at once: no backoff of retries.
    expect(Date.now() - started).toBeLessThan(200);
    const folders = await client.folders.list({ per_page: 100 });
    expect(folders.data.map((folder) => folder.name)).not.toContain('Never made');
  });

  it('cancels a call through its AbortSignal', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stopped by the caller'));
    await expect(client.files.list({}, { signal: controller.signal })).rejects.toThrow('stopped by the caller');
    const slow = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}) });
    const late = new AbortController();
    setTimeout(() => late.abort(new Error('took too long')), 200);
    await expect(client.files.upload(slow, { name: 'never.bin', signal: late.signal })).rejects.toThrow('took too long');
  });

  it('retries a POST whose answer was lost with the same Idempotency-Key, so it acts once', async () => {
    const account = await createAccount(t.app);
    let dropped = 0;
    // The network fault: the server gets and handles the first POST, but its answer never reaches the client.
    const lossyFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === 'POST' && dropped++ === 0) throw new TypeError('fetch failed: connection reset');
      return response;
    };
    const lossy = new FileStorage({ apiKey: account.apiKey, baseUrl: t.baseUrl, fetch: lossyFetch });
    const folder = await lossy.folders.create({ name: 'Once' });
    const page = await lossy.folders.list();
    expect(page.data.map((f) => f.id)).toEqual([folder.id]);
    expect(dropped).toBe(2);
  });

  it("waits out a free account's rate limit (Retry-After) and the retried POST acts once", { timeout: 120_000 }, async () => {
    const free = await createAccount(t.app, { plan: 'free' });
    const postStatuses: number[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === 'POST') postStatuses.push(response.status);
      return response;
    };
    const freeClient = new FileStorage({ apiKey: free.apiKey, baseUrl: t.baseUrl, maxRetries: 1, fetch: recordingFetch });
    // Rate windows are wall-clock minutes: burn the budget 10 s before a window's end so Retry-After is short, and
    // the burst cannot cross into the next window (with less left, wait for the next window's last 10 s).
    const left = 60_000 - (Date.now() % 60_000);
    await sleep(left > 10_000 ? left - 10_000 : left + 50_000);
    for (let i = 0; i < 60; i++) await freeClient.user.info().catch(() => undefined);
    const refused = await new FileStorage({ apiKey: free.apiKey, baseUrl: t.baseUrl, maxRetries: 0 }).user.info().catch((e) => e);
    expect(refused).toBeInstanceOf(RateLimitError);
    expect(refused.retryAfter).toBeGreaterThanOrEqual(1);
    const folder = await freeClient.folders.create({ name: 'After the limit' });
    // Refused once, then sent again after Retry-After, and created.
    expect(postStatuses).toEqual([429, 201]);
    const names: string[] = [];
    for await (const f of freeClient.folders.listAll()) names.push(f.name);
    expect(names).toEqual([folder.name]);
  });
});
