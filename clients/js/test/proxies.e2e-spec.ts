import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Clock } from '../../../src/common/clock.js';
import { createAccount, type TestAccount } from '../../../test/support/accounts.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { ConnectionError, FileStorage, IdempotencyError, InvalidResponseError, RateLimitError, ServiceUnavailableError, TimeoutError } from '../src/index.js';
import { startTestProxy, type TestProxy } from './support/test-proxy.js';

const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');
/** A download by signed link, as the proxy's rules see it. */
const DOWNLOAD = /^GET \/v1\/files\/[^/]+\/download\?/;

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of Readable.fromWeb(stream as import('node:stream/web').ReadableStream<Uint8Array>)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** What `promise` settles to, or a failure naming `what` once `ms` have passed: a hang fails the test instead of stalling it. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: still waiting after ${ms} ms`)), ms)));
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

describe('the JavaScript client behind reverse proxies, captive portals and failing networks', () => {
  let t: TestApp;
  let account: TestAccount;
  /** The server under /storage, as its PUBLIC_BASE_URL says. */
  let mounted: TestProxy;
  const proxies: TestProxy[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'fss-js-proxies-'));

  /** Another proxy in front of the server, without a prefix. */
  async function proxy(): Promise<TestProxy> {
    const started = await startTestProxy({ upstream: t.baseUrl });
    proxies.push(started);
    return started;
  }

  beforeAll(async () => {
    mounted = await startTestProxy({ prefix: '/storage' });
    t = await startTestApp({ PUBLIC_BASE_URL: mounted.url });
    mounted.upstream = t.baseUrl;
    account = await createAccount(t.app);
  });
  afterAll(async () => {
    await Promise.all([mounted, ...proxies].map((p) => p?.close()));
    await t?.close();
  });

  it('keeps the path of a baseUrl: every call, the tus upload and the signed download go under it', async () => {
    const client = new FileStorage({ apiKey: account.apiKey, baseUrl: `${mounted.url}/`, resumableThresholdBytes: 256 * 1024, resumableChunkBytes: 128 * 1024 });
    const folder = await client.folders.create({ name: 'Under a prefix' });
    const small = await client.files.upload(Buffer.from('small'), { name: 'small.txt', folderId: folder.id });
    const bytes = randomBytes(300 * 1024 + 7);
    // Through tus: the server's Location (/v1/uploads/{id}) is under the base URL too.
    const big = await client.files.upload(new Blob([bytes]), { name: 'big.bin', folderId: folder.id });
    expect(big).toMatchObject({ size: bytes.length, md5_hash: md5(bytes) });
    const names: string[] = [];
    for await (const file of client.files.listAll({ folder_id: folder.id, per_page: 1, sort: 'name_asc' })) names.push(file.name);
    expect(names).toEqual(['big.bin', 'small.txt']);
    // The server's links carry the prefix of its PUBLIC_BASE_URL.
    expect(big.download_url.startsWith(`${mounted.url}/v1/files/${big.id}/download?`)).toBe(true);
    expect(md5(await readAll(await client.files.download(big.id)))).toBe(md5(bytes));
    await client.files.downloadTo(big.id, join(dir, 'big.bin'));
    expect(md5(readFileSync(join(dir, 'big.bin')))).toBe(md5(bytes));
    const share = await client.shares.create({ file_id: small.id });
    expect(share.url.startsWith(`${mounted.url}/s/`)).toBe(true);
    expect((await client.shares.open(share.url)).file).toMatchObject({ name: 'small.txt' });
    expect((await readAll(await client.shares.download(share.url))).toString()).toBe('small');
    const methods = new Set(mounted.requests.map((line) => line.split(' ')[0]));
    expect([...methods].sort()).toEqual(['GET', 'PATCH', 'POST']);
    expect(mounted.requests.filter((line) => !line.split(' ')[1].startsWith('/storage/'))).toEqual([]);
  });

  it('gives exactly the bytes of a range through a proxy that drops Range and answers the whole file (200)', async () => {
    const through = await proxy();
    through.ignoreRange(/^GET \/(v1\/files\/[^/]+\/download|s\/[^/]+\/download)/);
    const client = new FileStorage({ apiKey: account.apiKey, baseUrl: through.url });
    const bytes = randomBytes(200 * 1024 + 3);
    const file = await client.files.upload(Buffer.from(bytes), { name: 'ranges-dropped.bin' });
    const share = await client.shares.create({ file_id: file.id });
    const cases: Array<[{ start?: number; end?: number }, Buffer]> = [
      [{ start: 100, end: 199 }, bytes.subarray(100, 200)],
      [{ start: 150 * 1024 }, bytes.subarray(150 * 1024)],
      [{ start: -1000 }, bytes.subarray(bytes.length - 1000)],
      [{ end: 0 }, bytes.subarray(0, 1)],
    ];
    for (const [range, expected] of cases) {
      expect(md5(await readAll(await client.files.download(file.id, range))), JSON.stringify(range)).toBe(md5(expected));
      expect(md5(await readAll(await client.shares.download(share.url, range))), `share ${JSON.stringify(range)}`).toBe(md5(expected));
    }
    // Resuming a copy by appending from its size gives the file, not the file appended to its own start.
    await client.files.downloadTo(file.id, join(dir, 'resumed.bin'), { end: 4095 });
    const rest = await readAll(await client.files.download(file.id, { start: 4096 }));
    expect(md5(Buffer.concat([readFileSync(join(dir, 'resumed.bin')), rest]))).toBe(md5(bytes));
    expect(through.requests.filter((line) => DOWNLOAD.test(line)).length).toBeGreaterThanOrEqual(cases.length + 2);
  });

  it('continues a download cut or stalled part-way from the byte it stopped at, each byte once, within maxRetries', async () => {
    const through = await proxy();
    // Retries to spare: on a loaded machine an answer may pause past the 1 s stall limit on its own.
    const client = new FileStorage({ apiKey: account.apiKey, baseUrl: through.url, timeoutMs: 1_000, maxRetries: 4 });
    const bytes = randomBytes(300 * 1024 + 11);
    const file = await client.files.upload(Buffer.from(bytes), { name: 'continued.bin' });
    const share = await client.shares.create({ file_id: file.id });
    const SHARED = /^GET \/s\/[^/]+\/download/;

    // Cut after 100 KiB, then (the continuation) stalled after 50 KiB more.
    through.cutAnswers(DOWNLOAD, { afterBodyBytes: 100 * 1024, times: 1 });
    through.cutAnswers(DOWNLOAD, { afterBodyBytes: 50 * 1024, stall: true, times: 1 });
    await client.files.downloadTo(file.id, join(dir, 'continued.bin'));
    expect(md5(readFileSync(join(dir, 'continued.bin')))).toBe(md5(bytes));
    expect(through.answersCut).toBe(2);

    // A range cut part-way goes on within the range; a shared file's download the same way.
    through.cutAnswers(DOWNLOAD, { afterBodyBytes: 1000, times: 1 });
    expect(md5(await readAll(await client.files.download(file.id, { start: 5000, end: 250_000 })))).toBe(md5(bytes.subarray(5000, 250_001)));
    through.cutAnswers(SHARED, { afterBodyBytes: 64 * 1024, times: 1 });
    expect(md5(await readAll(await client.shares.download(share.url)))).toBe(md5(bytes));

    expect(through.answersCut).toBe(4);

    // Past its retries (2 by default) the cut is the caller's.
    through.cutAnswers(DOWNLOAD, { afterBodyBytes: 10 * 1024, times: 3 });
    const defaults = new FileStorage({ apiKey: account.apiKey, baseUrl: through.url });
    await expect(defaults.files.downloadTo(file.id, join(dir, 'given-up.bin'))).rejects.toBeInstanceOf(ConnectionError);
    expect(existsSync(join(dir, 'given-up.bin'))).toBe(false);
  });

  it('does not continue a cut download with the bytes of a file changed meanwhile: it raises, saying so', async () => {
    const through = await proxy();
    const client = new FileStorage({ apiKey: account.apiKey, baseUrl: through.url, timeoutMs: 1_000 });
    const file = await client.files.upload(Buffer.from(randomBytes(200 * 1024)), { name: 'changing.bin' });
    through.cutAnswers(DOWNLOAD, { afterBodyBytes: 64 * 1024, stall: true, times: 1 });
    // The answer has begun; its stall is only timed while the stream is read, which starts once the file has new
    // content (same id, a new ETag).
    const download = await client.files.download(file.id);
    await client.files.upload(Buffer.from(randomBytes(200 * 1024)), { name: 'changing.bin', overwrite: true });
    await expect(readAll(download)).rejects.toThrow(/changed on the server/);
  });

  it('continues a download cut after its link expired (the hour of a download_url) through a fresh link', async () => {
    const through = await proxy();
    const client = new FileStorage({ apiKey: account.apiKey, baseUrl: through.url, timeoutMs: 1_000 });
    const bytes = randomBytes(200 * 1024);
    const file = await client.files.upload(Buffer.from(bytes), { name: 'long-download.bin' });
    through.cutAnswers(DOWNLOAD, { afterBodyBytes: 64 * 1024, stall: true, times: 1 });
    // The answer has begun; its stall is only timed while the stream is read, which starts two hours later by the
    // server's clock: the link the download began with has expired by the time it must be continued.
    const download = await client.files.download(file.id);
    const twoHoursOn = vi.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(Date.now() + 2 * 3600_000));
    try {
      expect(md5(await readAll(download))).toBe(md5(bytes));
    } finally {
      twoHoursOn.mockRestore();
    }
    expect(through.answersCut).toBe(1);
  });

  it("raises InvalidResponseError with the status and the start of the body for a captive portal's page", async () => {
    const portal = await proxy();
    const page = `<!DOCTYPE html>\n<html><head><title>Sign in to the hotel Wi-Fi</title></head><body>${'x'.repeat(1000)}</body></html>`;
    portal.answer(/^GET \/v1\/(user\/info|files)\b/, { status: 200, headers: { 'Content-Type': 'text/html', 'X-Request-Id': 'req_portal' }, body: page });
    const client = new FileStorage({ apiKey: account.apiKey, baseUrl: portal.url });
    for (const call of [() => client.user.info(), () => client.files.list()]) {
      const error = await call().catch((e) => e);
      expect(error).toBeInstanceOf(InvalidResponseError);
      expect(error).toMatchObject({ status: 200, code: 'invalid_response', requestId: 'req_portal' });
      expect(error.message).toContain('200');
      expect(error.message).toContain('text/html');
      expect(error.message).toContain('"<!DOCTYPE html> <html><head><title>Sign in to the hotel Wi-Fi</title>');
      expect(error.message.length).toBeLessThan(400);
    }
  });

  it('raises at once, with retryAfter, when Retry-After is longer than the client waits, instead of retrying early', async () => {
    const refusing = await proxy();
    const envelope = (code: string) => JSON.stringify({ success: false, error: { code, message: 'later' } });
    refusing.answer(/^POST \/v1\/folders$/, { status: 429, headers: { 'Retry-After': '3600', 'Content-Type': 'application/json' }, body: envelope('rate_limit_exceeded') });
    refusing.answer(/^GET \/v1\/user\/info$/, { status: 503, headers: { 'Retry-After': '3600', 'Content-Type': 'text/html' }, body: '<html>down for maintenance</html>' });
    refusing.answer(/^POST \/v1\/api-keys$/, { status: 409, headers: { 'Retry-After': '3600', 'Content-Type': 'application/json' }, body: envelope('idempotency_key_in_use') });
    const client = new FileStorage({ apiKey: account.apiKey, baseUrl: refusing.url, maxRetries: 3 });
    const started = Date.now();
    const limited = await client.folders.create({ name: 'Later' }).catch((e) => e);
    const unavailable = await client.user.info().catch((e) => e);
    const inUse = await client.apiKeys.create({ name: 'later', scopes: ['read'] }).catch((e) => e);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(limited).toBeInstanceOf(RateLimitError);
    expect(unavailable).toBeInstanceOf(ServiceUnavailableError);
    expect(inUse).toBeInstanceOf(IdempotencyError);
    for (const error of [limited, unavailable, inUse]) expect(error.retryAfter).toBe(3600);
    expect(refusing.requests).toEqual(['POST /v1/folders', 'GET /v1/user/info', 'POST /v1/api-keys']);
  });

  it('fails a body that stalls for timeoutMs with a TimeoutError: a download, to a path or read as a stream, and a JSON answer', async () => {
    const bytes = randomBytes(512 * 1024);
    const file = await new FileStorage({ apiKey: account.apiKey, baseUrl: t.baseUrl }).files.upload(bytes, { name: 'stalls.bin' });
    const stalling = await proxy();
    stalling.cutAnswers(DOWNLOAD, { afterBodyBytes: 64 * 1024, stall: true });
    stalling.cutAnswers(/^GET \/v1\/user\/info$/, { afterBodyBytes: 10, stall: true });
    // No retries: a stalled download would otherwise be continued (the test above).
    const client = new FileStorage({ apiKey: account.apiKey, baseUrl: stalling.url, timeoutMs: 1_000, maxRetries: 0 });
    const target = join(dir, 'stalled.bin');
    const toPath = await within(10_000, 'downloadTo()', client.files.downloadTo(file.id, target).catch((e) => e));
    expect(toPath).toBeInstanceOf(TimeoutError);
    expect(toPath).toMatchObject({ code: 'timeout', message: expect.stringMatching(/^The download of file_\w+ stalled: no bytes for 1000 ms after \d+ bytes/) });
    expect(existsSync(target)).toBe(false);
    const asStream = await within(10_000, 'reading download()', readAll(await client.files.download(file.id)).catch((e) => e));
    expect(asStream).toBeInstanceOf(TimeoutError);
    // The suite's contract check (test/support/contract.ts) reads a JSON answer whole before the caller sees it: the
    // client gets its own fetch here, to meet the stalled body as it would in an application.
    const ownFetch = undiciFetch as unknown as typeof fetch;
    const json = await within(10_000, 'user.info()', new FileStorage({ apiKey: account.apiKey, baseUrl: stalling.url, timeoutMs: 1_000, fetch: ownFetch }).user.info().catch((e) => e));
    expect(json).toBeInstanceOf(TimeoutError);
    expect(json.message).toBe('The answer to GET /v1/user/info stalled: no bytes for 1000 ms after 10 bytes.');
    expect(stalling.answersCut).toBe(3);
  });

  it('leaves the signature of a download link out of its errors', async () => {
    const file = await new FileStorage({ apiKey: account.apiKey, baseUrl: t.baseUrl }).files.upload(Buffer.from('signed'), { name: 'signed.txt' });
    const hangingUp = await proxy();
    hangingUp.cutAnswers(DOWNLOAD);
    const silent = await proxy();
    silent.cutAnswers(DOWNLOAD, { stall: true });
    const cut = await new FileStorage({ apiKey: account.apiKey, baseUrl: hangingUp.url, maxRetries: 0 }).files.download(file.id).catch((e) => e);
    const timedOut = await new FileStorage({ apiKey: account.apiKey, baseUrl: silent.url, maxRetries: 0, timeoutMs: 1_000 }).files.download(file.id).catch((e) => e);
    expect(cut).toBeInstanceOf(ConnectionError);
    expect(timedOut).toBeInstanceOf(TimeoutError);
    for (const error of [cut, timedOut]) {
      expect(error.message).toMatch(/GET \/v1\/files\/file_\w+\/download\?<redacted>/);
      expect(`${error.message} ${String(error)} ${JSON.stringify(error)}`).not.toMatch(/signature|expires=/);
    }
  });
});
