import { createHash, createHmac } from 'node:crypto';
import { Readable } from 'node:stream';
import { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { Clock } from '../../../src/common/clock.js';
import { BlobStorage } from '../../../src/infra/storage/blob-storage.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { UploadReservationEntity } from '../../../src/modules/files/upload/upload-reservation.entity.js';
import { ServerInstance } from '../../../src/infra/instances/server-instance.js';
import type { TestAccount } from '../../support/accounts.js';
import type { TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';
import { rawExchange } from '../../support/raw-http.js';
import { eventually } from '../../support/time.js';
import { downloadDuringHeldOverwrite, onTestServer, uploadOk } from '../../support/uploads.js';
import { settledJob, thumbnailsQueue } from '../media/media-support.js';

describe('signed downloads', () => {
  let t: TestApp;
  let owner: TestAccount;
  let file: any;
  const content = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
  const md5 = createHash('md5').update(content).digest('hex');

  useTestApp((started) => ({ t, owner } = started));
  beforeAll(async () => {
    file = await uploadOk(t, owner.auth, content, { name: 'Jahresbericht "2026" ü.bin' });
  });

  const url = () => onTestServer(t, file.download_url);

  it('streams the whole file without an API key, with ETag and Content-Disposition', async () => {
    const res = await fetch(url());
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(content);
    expect(res.headers.get('etag')).toBe(`"${md5}"`);
    expect(res.headers.get('content-length')).toBe('1000');
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="Jahresbericht _2026_ _.bin"; filename*=UTF-8''Jahresbericht%20%222026%22%20%C3%BC.bin`,
    );
    // Anyone's bytes on our origin: never a page with scripts, even if a browser rendered it.
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBe("sandbox; default-src 'none'");
  });

  it('accepts a link signed independently of the service: HMAC-SHA256 of "<path>\\n<expires>" under URL_SIGNING_SECRET', async () => {
    const path = `/v1/files/${file.id}/download`;
    const sign = (expires: number) => createHmac('sha256', t.environment.env.URL_SIGNING_SECRET!).update(`${path}\n${expires}`).digest('hex');
    // The link the API hands out is exactly that signature over its own expiry.
    const issued = new URL(file.download_url);
    expect(issued.searchParams.get('signature')).toBe(sign(Number(issued.searchParams.get('expires'))));
    // A link made here, for an expiry the service never issued, downloads; one second changed, it does not.
    const expires = Math.floor(Date.now() / 1000) + 600;
    const made = await fetch(`${t.baseUrl}${path}?expires=${expires}&signature=${sign(expires)}`);
    expect(made.status).toBe(200);
    expect(Buffer.from(await made.arrayBuffer())).toEqual(content);
    expect((await fetch(`${t.baseUrl}${path}?expires=${expires + 1}&signature=${sign(expires)}`)).status).toBe(403);
  });

  it('serves byte ranges with 206, and 416 for an unsatisfiable one', async () => {
    const part = await fetch(url(), { headers: { Range: 'bytes=10-19' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 10-19/1000');
    expect(Buffer.from(await part.arrayBuffer())).toEqual(content.subarray(10, 20));
    const suffix = await fetch(url(), { headers: { Range: 'bytes=-5' } });
    expect(Buffer.from(await suffix.arrayBuffer())).toEqual(content.subarray(995));
    const open = await fetch(url(), { headers: { Range: 'bytes=990-' } });
    expect(open.headers.get('content-range')).toBe('bytes 990-999/1000');
    const bad = await fetch(url(), { headers: { Range: 'bytes=5000-6000' } });
    expect(bad.status).toBe(416);
    expect(bad.headers.get('content-range')).toBe('bytes */1000');
    expect(((await bad.json()) as any).success).toBe(false);
  });

  it('answers an empty file\'s suffix range (bytes=-N, satisfiable by RFC 9110 14.1.2) with the whole, empty file', async () => {
    const empty = await uploadOk(t, owner.auth, Buffer.alloc(0), { name: 'empty.log' });
    const tail = await fetch(onTestServer(t, empty.download_url), { headers: { Range: 'bytes=-1024' } });
    expect(tail.status).toBe(200);
    expect(tail.headers.get('content-length')).toBe('0');
    expect(await tail.text()).toBe('');
    // A range that starts at a byte is not satisfiable by an empty file.
    expect((await fetch(onTestServer(t, empty.download_url), { headers: { Range: 'bytes=0-' } })).status).toBe(416);
  });

  it('streams a file larger than one read buffer byte for byte, whole and by ranges of any size', async () => {
    // Up to 64 KiB is read into one buffer, more is streamed: both paths, and ranges on either side of that size.
    const large = Buffer.from(Array.from({ length: 300 * 1024 }, (_, i) => (i * 7) % 253));
    const uploaded = await uploadOk(t, owner.auth, large, { name: 'large.bin' });
    const whole = await fetch(onTestServer(t, uploaded.download_url));
    expect(whole.headers.get('content-length')).toBe(String(large.length));
    expect(Buffer.from(await whole.arrayBuffer())).toEqual(large);
    for (const [start, end] of [[100_000, 100_099], [1_000, 201_000], [large.length - 65_536, large.length - 1]]) {
      const part = await fetch(onTestServer(t, uploaded.download_url), { headers: { Range: `bytes=${start}-${end}` } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes ${start}-${end}/${large.length}`);
      expect(Buffer.from(await part.arrayBuffer())).toEqual(large.subarray(start, end + 1));
    }
  });

  it('answers 500 internal_error, not a short body, when a blob was cut short on disk outside the service', async () => {
    const storage = t.app.get(BlobStorage);
    // Up to 64 KiB a download is read into one buffer, above it streamed: both refuse a blob shorter than its row says.
    for (const [size, kept] of [[1000, 600], [200 * 1024, 150 * 1024]]) {
      const content = Buffer.alloc(size, 7);
      const damaged = await uploadOk(t, owner.auth, content, { name: `damaged-${size}.bin` });
      const { blobKey } = await t.app.get(DataSource).getRepository(FileEntity).findOneByOrFail({ id: damaged.id });
      await storage.delete(blobKey);
      await storage.write(blobKey, Readable.from([content.subarray(0, kept)]));
      const res = await fetch(onTestServer(t, damaged.download_url), { signal: AbortSignal.timeout(10_000) });
      expect(res.status, `${size} bytes`).toBe(500);
      expect(((await res.json()) as any).error.code).toBe('internal_error');
      // A range that the shortened blob still holds is served as before.
      const part = await fetch(onTestServer(t, damaged.download_url), { headers: { Range: 'bytes=0-99' } });
      expect(part.status).toBe(206);
      expect(Buffer.from(await part.arrayBuffer())).toEqual(content.subarray(0, 100));
    }
  });

  it('serves the new bytes, not a 500, to a download that arrives while an overwrite moves its bytes into place', async () => {
    const original = await uploadOk(t, owner.auth, 'first version', { name: 'overwritten-while-downloading.txt' });
    const res = await downloadDuringHeldOverwrite(t, owner.auth, 'overwritten-while-downloading.txt', 'second version', onTestServer(t, original.download_url));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('second version');
  });

  it('answers 503 with Retry-After, not 500, while another server process is still moving the file\'s new bytes into place', async () => {
    // As another process leaves it between an overwrite's commit and its move: the row names a blob not there yet,
    // and the upload's reservation row still names the file.
    const uploaded = await uploadOk(t, owner.auth, 'bytes on their way', { name: 'placed-elsewhere.txt' });
    const dataSource = t.app.get(DataSource);
    const { blobKey } = await dataSource.getRepository(FileEntity).findOneByOrFail({ id: uploaded.id });
    await t.app.get(BlobStorage).delete(blobKey);
    const tempKey = `tmp/upl_elsewhere_${Date.now()}`;
    await t.app.get(BlobStorage).write(tempKey, Readable.from([Buffer.from('bytes on their way')]));
    const now = new Date();
    await dataSource.getRepository(UploadReservationEntity).insert({
      id: tempKey.slice('tmp/'.length),
      accountId: owner.accountId,
      bytes: 0,
      tempKey,
      createdAt: now,
      updatedAt: now,
      instanceId: t.app.get(ServerInstance).id,
      fileId: uploaded.id,
      obsoleteBlobKeys: null,
    });
    const res = await fetch(onTestServer(t, uploaded.download_url));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await res.json()) as any).error.code).toBe('service_unavailable');
  });

  it('answers 304 to a matching If-None-Match and ignores a Range whose If-Range is stale', async () => {
    const notModified = await fetch(url(), { headers: { 'If-None-Match': `"${md5}"` } });
    expect(notModified.status).toBe(304);
    const stale = await fetch(url(), { headers: { Range: 'bytes=0-9', 'If-Range': '"old"' } });
    expect(stale.status).toBe(200);
    expect((await stale.arrayBuffer()).byteLength).toBe(1000);
  });

  it('refuses with 412 a range whose If-Match or If-Unmodified-Since names a version the file no longer is', async () => {
    // A client fetching a file in several ranges pins them to the version it started with.
    const first = await uploadOk(t, owner.auth, 'version one, twenty-nine bytes', { name: 'pinned.txt' });
    const link = onTestServer(t, first.download_url);
    const pinned = (headers: Record<string, string>) => fetch(link, { headers: { Range: 'bytes=0-6', ...headers } });
    const part = await pinned({ 'If-Match': `"${first.md5_hash}"` });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe('version');
    expect((await pinned({ 'If-Match': '*' })).status).toBe(206);
    const since = new Date(first.modified_at).toUTCString();
    expect((await pinned({ 'If-Unmodified-Since': since })).status).toBe(206);

    // Into the next second, so that the date no longer covers the overwrite.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const second = await uploadOk(t, owner.auth, 'VERSION TWO, other bytes here!', { name: 'pinned.txt', overwrite: true });
    const stale: Array<Record<string, string>> = [{ 'If-Match': `"${first.md5_hash}"` }, { 'If-Match': `W/"${second.md5_hash}"` }, { 'If-Unmodified-Since': since }];
    for (const headers of stale) {
      const refused = await pinned(headers);
      expect(refused.status, JSON.stringify(headers)).toBe(412);
      expect(refused.headers.get('etag')).toBe(`"${second.md5_hash}"`);
      expect(((await refused.json()) as any).error.code).toBe('conflict');
    }
    expect((await pinned({ 'If-Match': `"${first.md5_hash}", "${second.md5_hash}"` })).status).toBe(206);
  });

  it('resumes a download whose If-Range is the Last-Modified date, once that date is a strong validator; otherwise sends the whole file', async () => {
    const fresh = await uploadOk(t, owner.auth, content, { name: 'resume-by-date.bin' });
    const link = onTestServer(t, fresh.download_url);
    const whole = await fetch(link);
    const lastModified = whole.headers.get('last-modified')!;
    expect(lastModified).toBe(new Date(fresh.modified_at).toUTCString());
    const resume = (ifRange: string) => fetch(link, { headers: { Range: 'bytes=600-', 'If-Range': ifRange } });

    // The answers' time, pinned: first within the second of the upload, when its date may still name another version.
    const modifiedAt = new Date(fresh.modified_at).getTime();
    const clock = vi.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(modifiedAt));
    try {
      const weak = await resume(lastModified);
      expect(weak.status).toBe(200);
      expect(Buffer.from(await weak.arrayBuffer())).toEqual(content);

      clock.mockImplementation(() => new Date(Math.floor(modifiedAt / 1000) * 1000 + 1000));
      const resumed = await resume(lastModified);
      expect(resumed.status).toBe(206);
      expect(resumed.headers.get('content-range')).toBe('bytes 600-999/1000');
      expect(Buffer.from(await resumed.arrayBuffer())).toEqual(content.subarray(600));

      // Another date, a weak ETag or no validator at all: the whole file.
      for (const ifRange of [new Date(modifiedAt - 1000).toUTCString(), new Date(modifiedAt + 1000).toUTCString(), `W/"${md5}"`, 'yesterday']) {
        const refused = await resume(ifRange);
        expect(refused.status, ifRange).toBe(200);
        expect((await refused.arrayBuffer()).byteLength, ifRange).toBe(1000);
      }
    } finally {
      clock.mockRestore();
    }
  });

  it('answers HEAD with the headers only', async () => {
    // Read off the wire: fetch drops whatever follows a HEAD answer's headers, so only the raw bytes show none follow.
    const link = new URL(url());
    const raw = await rawExchange(link.origin, `HEAD ${link.pathname}${link.search} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    const [head, body] = raw.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head).toMatch(/^content-length: 1000$/im);
    expect(head).toMatch(new RegExp(`^etag: "${md5}"$`, 'im'));
    expect(body).toBe('');
  });

  it('refuses a tampered, truncated or expired link with 403 permission_denied', async () => {
    const u = new URL(url());
    const signature = u.searchParams.get('signature')!;
    const expires = Number(u.searchParams.get('expires'));
    const variants = [
      `${u.origin}${u.pathname}?expires=${expires}&signature=${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`,
      `${u.origin}${u.pathname}?expires=${expires + 3600}&signature=${signature}`,
      `${u.origin}${u.pathname}?expires=${expires}`,
      `${u.origin}${u.pathname}`,
      `${u.origin}/v1/files/file_other/download?expires=${expires}&signature=${signature}`,
    ];
    for (const variant of variants) {
      const res = await fetch(variant);
      expect(res.status, variant).toBe(403);
      expect(((await res.json()) as any).error.code).toBe('permission_denied');
    }
    const signer = (await import('../../../src/infra/storage/url-signer.js')).UrlSigner;
    const expired = t.app.get(signer).sign(`/v1/files/${file.id}/download`, new Date(Date.now() - 2 * 3600_000));
    expect((await fetch(onTestServer(t, expired))).status).toBe(403);
  });

  it('answers 404 for a trashed file and 403 file_infected for a quarantined one', async () => {
    const trashed = await uploadOk(t, owner.auth, 'bye', { name: 'bye.txt' });
    await t.http().delete(`/v1/files/${trashed.id}`).set(owner.auth);
    const gone = await fetch(onTestServer(t, trashed.download_url));
    expect(gone.status).toBe(404);
    const infected = await uploadOk(t, owner.auth, 'bad', { name: 'bad.exe' });
    const files = t.app.get(DataSource).getRepository(FileEntity);
    // The upload's own scan (queued by the outbox relay) must finish first, or its verdict would replace this one.
    await eventually(async () => (await files.findOneByOrFail({ id: infected.id })).scanStatus !== 'pending', 20_000, 'the upload scan to finish');
    await files.update({ id: infected.id }, { scanStatus: 'infected' });
    const blocked = await fetch(onTestServer(t, infected.download_url));
    expect(blocked.status).toBe(403);
    expect(((await blocked.json()) as any).error.code).toBe('file_infected');
  });

  it('offers a signed thumbnail_url once a thumbnail exists, served inline as WebP', async () => {
    const image = await uploadOk(t, owner.auth, 'pretend image', { name: 'p.png' });
    expect(image.thumbnail_url).toBeUndefined();
    // Let the upload's own thumbnail job (these bytes are no image) finish first, so it cannot undo the thumbnail set below.
    await settledJob(thumbnailsQueue(t.app), 'thumbnail', await t.app.get(DataSource).getRepository(FileEntity).findOneByOrFail({ id: image.id }));
    const key = `thumbnails/${owner.accountId}/${image.id}/v1.webp`;
    await t.app.get(BlobStorage).write(key, Readable.from([Buffer.from('RIFFxxxxWEBP')]));
    await t.app.get(DataSource).getRepository(FileEntity).update({ id: image.id }, { thumbnailKey: key });
    const fresh = (await t.http().get(`/v1/files/${image.id}`).set(owner.auth)).body.data;
    expect(fresh.thumbnail_url).toMatch(new RegExp(`/v1/files/${image.id}/thumbnail\\?expires=\\d+&signature=[0-9a-f]{64}$`));
    const res = await fetch(onTestServer(t, fresh.thumbnail_url));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/webp');
    expect(res.headers.get('content-disposition')).toMatch(/^inline;/);
    expect(await res.text()).toBe('RIFFxxxxWEBP');
    // Revalidated and read in parts like a download, as the OpenAPI document says.
    const etag = res.headers.get('etag')!;
    expect((await fetch(onTestServer(t, fresh.thumbnail_url), { headers: { 'If-None-Match': etag } })).status).toBe(304);
    const part = await fetch(onTestServer(t, fresh.thumbnail_url), { headers: { Range: 'bytes=0-3' } });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe('RIFF');
    // A download signature does not open the thumbnail and vice versa.
    const crossed = onTestServer(t, fresh.download_url).replace('/download?', '/thumbnail?');
    expect((await fetch(crossed)).status).toBe(403);
  });
});
