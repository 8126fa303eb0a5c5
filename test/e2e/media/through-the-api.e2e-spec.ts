import { QueryBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { GetFileMediaQuery } from '../../../src/modules/media/queries/get-file-media.query.js';
import { describe, expect, it } from 'vitest';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import sharp from 'sharp';
import { hugeDeclaredPng, jpegImage, mp4Video, onePagePdf, pngImage, svgEmbeddingHugePng, tiledTiffBomb, widePng } from '../../support/media.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';
import { onTestServer, uploadOk } from '../../support/uploads.js';
import { queued, scansQueue, settledJob, startClamd, thumbnailsQueue } from './media-support.js';
import { scanSettled } from '../../support/files.js';
import { eventually } from '../../support/time.js';

describe('media work driven by the real routes', () => {
  let t: TestApp;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started));

  const fileRow = (id: string) => t.app.get(DataSource).getRepository(FileEntity).findOneByOrFail({ id });

  it('an uploaded image gets a signed thumbnail_url that serves WebP, and its scan settles', async () => {
    const uploaded = await uploadOk(t, owner.auth, await pngImage(640, 480), { name: 'photo.png' });
    expect(uploaded.thumbnail_url).toBeUndefined();
    const withThumbnail = await eventually(async () => {
      const res = await t.http().get(`/v1/files/${uploaded.id}`).set(owner.auth);
      return res.body.data.thumbnail_url ? res.body.data : null;
    }, 20_000, 'thumbnail_url on the file');
    const thumbnail = await fetch(onTestServer(t, withThumbnail.thumbnail_url));
    expect(thumbnail.status).toBe(200);
    expect(thumbnail.headers.get('content-type')).toBe('image/webp');
    expect(withThumbnail.scan_status).not.toBe('infected');
    await eventually(async () => (await fileRow(uploaded.id)).scanStatus !== 'pending', 20_000, 'the scan verdict');
  });

  it('concurrent uploads\' scan and thumbnail jobs find their bytes in place at the first attempt (none fails and retries)', async () => {
    // With a real clamd, so that every upload has a scan job as well as a thumbnail job.
    const clamd = await startClamd();
    const scanning = await startTestApp({ CLAMAV_HOST: clamd.host, CLAMAV_PORT: String(clamd.port) });
    try {
      const uploader = await createAccount(scanning.app);
      const png = await pngImage(64, 64);
      const uploaded = await Promise.all(Array.from({ length: 12 }, (_, i) => uploadOk(scanning, uploader.auth, png, { name: `burst-${i}.png` })));
      const rowOf = (id: string) => scanning.app.get(DataSource).getRepository(FileEntity).findOneByOrFail({ id });
      for (const { id } of uploaded) {
        const row = await rowOf(id);
        const thumbnail = await settledJob(thumbnailsQueue(scanning.app), 'thumbnail', row);
        expect(await thumbnail.getState(), `thumbnail of ${id}`).toBe('completed');
        expect(thumbnail.stacktrace, `thumbnail of ${id}: no failed attempt`).toEqual([]);
        const scan = await settledJob(scansQueue(scanning.app), 'scan', row);
        expect(await scan.getState(), `scan of ${id}`).toBe('completed');
        expect(scan.stacktrace, `scan of ${id}: no failed attempt`).toEqual([]);
        expect((await scanSettled(scanning.app, id)).scanStatus).toBe('clean');
      }
    } finally {
      await scanning.close();
      await clamd.stop();
    }
  });

  it('a file trashed before its thumbnail was made gets one when POST /restore brings it back', async () => {
    const queue = thumbnailsQueue(t.app);
    await queue.pause();
    let id: string;
    try {
      const uploaded = await uploadOk(t, owner.auth, await pngImage(300, 300), { name: 'later.png' });
      id = uploaded.id;
      await queued(queue, 1, 'the thumbnail job');
      await t.http().delete(`/v1/files/${id}`).set(owner.auth).expect(200);
    } finally {
      await queue.resume();
    }
    const row = await fileRow(id);
    await settledJob(queue, 'thumbnail', row);
    expect((await fileRow(id)).thumbnailKey).toBeNull();

    await t.http().post(`/v1/files/${id}/restore`).set(owner.auth).expect(200);
    await eventually(async () => (await t.http().get(`/v1/files/${id}`).set(owner.auth)).body.data.thumbnail_url, 20_000, 'thumbnail after restore');
  });
  /** The file as GET /v1/files/{id} shows it once it has a thumbnail_url. */
  const withThumbnail = (id: string, what: string) =>
    eventually(async () => {
      const res = await t.http().get(`/v1/files/${id}`).set(owner.auth);
      return res.body.data?.thumbnail_url ? res.body.data : null;
    }, 30_000, what);

  /** What a client fetching thumbnail_url gets: its content type and the picture's format and size. */
  async function thumbnailAt(url: string) {
    const res = await fetch(onTestServer(t, url));
    expect(res.status).toBe(200);
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    return { type: res.headers.get('content-type'), format: meta.format, width: meta.width, height: meta.height };
  }

  it('an uploaded video gets a thumbnail_url serving a WebP frame taken with ffmpeg', async () => {
    const uploaded = await uploadOk(t, owner.auth, mp4Video(2), { name: 'clip.mp4' });
    const file = await withThumbnail(uploaded.id, 'the video thumbnail');
    expect(await thumbnailAt(file.thumbnail_url)).toEqual({ type: 'image/webp', format: 'webp', width: 256, height: 192 });
  });

  it('an uploaded PDF gets a thumbnail_url serving its first page as WebP', async () => {
    const uploaded = await uploadOk(t, owner.auth, onePagePdf(), { name: 'doc.pdf' });
    const file = await withThumbnail(uploaded.id, 'the PDF thumbnail');
    expect(await thumbnailAt(file.thumbnail_url)).toMatchObject({ type: 'image/webp', format: 'webp', height: 256 });
  });

  it('an uploaded text file gets no thumbnail_url, and its scan still settles', async () => {
    const uploaded = await uploadOk(t, owner.auth, 'plain text', { name: 'notes.txt' });
    await scanSettled(t.app, uploaded.id);
    const shown = (await t.http().get(`/v1/files/${uploaded.id}`).set(owner.auth).expect(200)).body.data;
    expect(shown.thumbnail_url).toBeUndefined();
    // clean or skipped, depending on whether a clamd listens at Debian's default socket on this machine.
    expect(shown.scan_status).not.toBe('pending');
  });

  it('overwriting an image through the upload route shows the new picture, never the old one', async () => {
    const first = await uploadOk(t, owner.auth, await jpegImage(800, 600), { name: 'portrait.jpg' });
    const before = await withThumbnail(first.id, 'the first thumbnail');
    expect(await thumbnailAt(before.thumbnail_url)).toMatchObject({ width: 256, height: 192 });

    const queue = thumbnailsQueue(t.app);
    await queue.pause();
    try {
      const replaced = await uploadOk(t, owner.auth, await jpegImage(200, 400), { name: 'portrait.jpg', overwrite: true });
      expect(replaced.id).toBe(first.id);
      // Until the new version's thumbnail exists the file shows none.
      await eventually(async () => (await t.http().get(`/v1/files/${first.id}`).set(owner.auth)).body.data.thumbnail_url === undefined, 10_000, 'the stale thumbnail_url to go');
      // The link handed out before no longer serves the old picture.
      expect((await fetch(onTestServer(t, before.thumbnail_url))).status).toBe(404);
    } finally {
      await queue.resume();
    }
    const after = await withThumbnail(first.id, 'the new version\'s thumbnail');
    expect(await thumbnailAt(after.thumbnail_url)).toEqual({ type: 'image/webp', format: 'webp', width: 128, height: 256 });
  });

  it('overwriting an image with a text file through the upload route drops its thumbnail_url', async () => {
    const first = await uploadOk(t, owner.auth, await pngImage(300, 300), { name: 'was-an-image' });
    await withThumbnail(first.id, 'the image thumbnail');
    const replaced = await uploadOk(t, owner.auth, 'now a text', { name: 'was-an-image', overwrite: true });
    expect(replaced.id).toBe(first.id);
    await eventually(async () => (await t.http().get(`/v1/files/${first.id}`).set(owner.auth)).body.data.thumbnail_url === undefined, 10_000, 'the thumbnail_url to go');
    await scanSettled(t.app, first.id);
    const shown = (await t.http().get(`/v1/files/${first.id}`).set(owner.auth).expect(200)).body.data;
    expect(shown.thumbnail_url).toBeUndefined();
  });
  it('an uploaded decompression bomb gets no thumbnail_url, and stays listed and downloadable', async () => {
    const bomb = hugeDeclaredPng(100_000, 100_000);
    const uploaded = await uploadOk(t, owner.auth, bomb, { name: 'bomb.png' });
    const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', await fileRow(uploaded.id));
    expect(await job.getState()).toBe('failed');
    const shown = (await t.http().get(`/v1/files/${uploaded.id}`).set(owner.auth).expect(200)).body.data;
    expect(shown.thumbnail_url).toBeUndefined();
    const listed = (await t.http().get('/v1/files?per_page=100').set(owner.auth)).body.data.map((f: { id: string }) => f.id);
    expect(listed).toContain(uploaded.id);
    const download = await fetch(onTestServer(t, shown.download_url));
    expect(download.status).toBe(200);
    expect(Buffer.compare(Buffer.from(await download.arrayBuffer()), bomb)).toBe(0);
  });

  it('an uploaded SVG embedding a huge picture is rendered outside the server process, which does not grow by what it decodes', async () => {
    // 1.8 MB of SVG whose embedded 10000 x 10000 PNG librsvg decodes whole: rendered in the server process, it grew by
    // about 1.1 GB (the SVG declares 400 x 400, so neither THUMBNAIL_MAX_INPUT_PIXELS nor THUMBNAIL_MAX_DECODE_MB saw it).
    const svg = await svgEmbeddingHugePng();
    const peakBeforeMb = process.resourceUsage().maxRSS / 1024;
    const uploaded = await uploadOk(t, owner.auth, svg, { name: 'drawing.svg' });
    const row = await fileRow(uploaded.id);
    expect(row.mimeType).toBe('image/svg+xml');
    const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', row);
    // The server holds no more than an image it must decode whole may take in it (THUMBNAIL_MAX_DECODE_MB, 256).
    expect(process.resourceUsage().maxRSS / 1024 - peakBeforeMb).toBeLessThan(256);
    // Within THUMBNAIL_TOOL_MEMORY_MB the child renders it: the file gets its thumbnail as any image does.
    expect(await job.getState()).toBe('completed');
    const shown = (await t.http().get(`/v1/files/${uploaded.id}`).set(owner.auth).expect(200)).body.data;
    const thumbnail = await fetch(onTestServer(t, shown.thumbnail_url));
    expect(thumbnail.status).toBe(200);
    expect((await sharp(Buffer.from(await thumbnail.arrayBuffer())).metadata()).width).toBe(256);
    const download = await fetch(onTestServer(t, shown.download_url));
    expect(Buffer.compare(Buffer.from(await download.arrayBuffer()), svg)).toBe(0);
  });

  it('an uploaded TIFF whose huge tiles would be decoded a row at a time gets no thumbnail, says why, and the server does not grow by them', async () => {
    // Under 0.5 MB: 24000 x 4096 RGBA in 4096 px tiles, which grew the server by about 0.5 GB while it was thumbnailed.
    const tiff = tiledTiffBomb();
    expect(tiff.length).toBeLessThan(1024 * 1024);
    const peakBeforeMb = process.resourceUsage().maxRSS / 1024;
    const uploaded = await uploadOk(t, owner.auth, tiff, { name: 'scan.tif' });
    const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', await fileRow(uploaded.id));
    // Held to what an image the server must decode whole may take in it (THUMBNAIL_MAX_DECODE_MB, 256).
    expect(process.resourceUsage().maxRSS / 1024 - peakBeforeMb).toBeLessThan(256);
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    const recorded = await t.app.get(QueryBus).execute(new GetFileMediaQuery(uploaded.id));
    expect(recorded).toMatchObject({ thumbnailStatus: 'failed', thumbnailError: expect.stringMatching(/tiles.*THUMBNAIL_MAX_DECODE_MB/) });
    const shown = (await t.http().get(`/v1/files/${uploaded.id}`).set(owner.auth).expect(200)).body.data;
    expect(shown.thumbnail_url).toBeUndefined();
    const download = await fetch(onTestServer(t, shown.download_url));
    expect(Buffer.compare(Buffer.from(await download.arrayBuffer()), tiff)).toBe(0);
  });

  it('an uploaded PNG of extreme width gets no thumbnail, says why, and the server does not grow by its rows', async () => {
    // 78 KB, 1,000,000 x 10 (within the pixel limit): streaming it grew the server by about 1.5 GB.
    const png = widePng(1_000_000, 10);
    const peakBeforeMb = process.resourceUsage().maxRSS / 1024;
    const uploaded = await uploadOk(t, owner.auth, png, { name: 'strip.png' });
    const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', await fileRow(uploaded.id));
    expect(process.resourceUsage().maxRSS / 1024 - peakBeforeMb).toBeLessThan(256);
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    const recorded = await t.app.get(QueryBus).execute(new GetFileMediaQuery(uploaded.id));
    expect(recorded).toMatchObject({ thumbnailStatus: 'failed', thumbnailError: expect.stringMatching(/streamed .* rows at a time.*THUMBNAIL_MAX_DECODE_MB/) });
    const shown = (await t.http().get(`/v1/files/${uploaded.id}`).set(owner.auth).expect(200)).body.data;
    expect(shown.thumbnail_url).toBeUndefined();
    const download = await fetch(onTestServer(t, shown.download_url));
    expect(Buffer.compare(Buffer.from(await download.arrayBuffer()), png)).toBe(0);
  });
});
