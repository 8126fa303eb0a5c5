import { QueryBus } from '@nestjs/cqrs';
import sharp from 'sharp';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BlobStorage, blobKeys } from '../../../src/infra/storage/blob-storage.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { GenerateThumbnailHandler } from '../../../src/modules/media/commands/generate-thumbnail.command.js';
import { GetFileMediaQuery } from '../../../src/modules/media/queries/get-file-media.query.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { seedFile } from '../../support/files.js';
import { hugeDeclaredPng, jpegImage, mp4Video, onePagePdf, pngImage } from '../../support/media.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';
import { overwrite, queued, publishStored, reload, scansQueue, settledJob, thumbnailsQueue, thumbnailBlobs } from './media-support.js';
import { eventually, sleep } from '../../support/time.js';

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('thumbnails', () => {
  let t: TestApp;
  let account: TestAccount;

  useTestApp((started) => ({ t, owner: account } = started), { env: { MEDIA_RETRY_DELAY_MS: '100' } });

  const storage = () => t.app.get(BlobStorage);
  const media = (fileId: string) => t.app.get(QueryBus).execute(new GetFileMediaQuery(fileId));
  const thumbnailOf = (file: FileEntity) => blobKeys.thumbnail(file.accountId, file.id, blobKeys.versionOf(file.blobKey));
  async function expectWebpThumbnail(file: FileEntity, width: number, height: number) {
    const current = (await reload(t.app, file.id))!;
    expect(current.thumbnailKey).toBe(thumbnailOf(file));
    const meta = await sharp(await readAll(await storage().read(current.thumbnailKey!))).metadata();
    expect(meta.format).toBe('webp');
    expect([meta.width, meta.height]).toEqual([width, height]);
  }

  it('has no thumbnail before its job ran, then a 256 px WebP for a JPEG', async () => {
    const queue = thumbnailsQueue(t.app);
    await queue.pause();
    const file = await seedFile(t.app, account, { name: 'photo.jpg', content: await jpegImage(1200, 900), mimeType: 'image/jpeg', category: 'image' });
    publishStored(t.app, file);
    await queued(queue, 1, 'the job to be queued');
    expect((await reload(t.app, file.id))!.thumbnailKey).toBeNull();
    expect(await media(file.id)).toMatchObject({ thumbnailStatus: 'pending' });
    await queue.resume();

    const job = await settledJob(queue, 'thumbnail', file);
    expect(job.returnvalue).toMatchObject({ outcome: 'created' });
    await expectWebpThumbnail(file, 256, 192);
    expect(await media(file.id)).toMatchObject({ thumbnailStatus: 'ready', thumbnailError: null });
  });

  it('does not render a file already found infected, and says why', async () => {
    const queue = thumbnailsQueue(t.app);
    await queue.pause();
    try {
      const file = await seedFile(t.app, account, { name: 'exploit.jpg', content: await jpegImage(640, 480), mimeType: 'image/jpeg', category: 'image' });
      publishStored(t.app, file);
      await queued(queue, 1, 'the job to be queued');
      await settledJob(scansQueue(t.app), 'scan', file);
      // As the scan records a hit (a crafted image is exactly what a signature catches): quarantined before the thumbnail job runs.
      await t.app.get(DataSource).getRepository(FileEntity).update({ id: file.id }, { scanStatus: 'infected' });
      await queue.resume();
      const job = await settledJob(queue, 'thumbnail', file);
      expect(job.returnvalue).toMatchObject({ outcome: 'discarded', reason: expect.stringMatching(/quarantined/) });
      expect((await reload(t.app, file.id))!.thumbnailKey).toBeNull();
      expect(await storage().exists(thumbnailOf(file))).toBe(false);
      expect(await media(file.id)).toMatchObject({ thumbnailStatus: 'none', thumbnailError: expect.stringMatching(/quarantined/) });
    } finally {
      await queue.resume();
    }
  });

  it('makes thumbnails for PNG, WebP and GIF images', async () => {
    const png = await seedFile(t.app, account, { content: await pngImage(300, 600), mimeType: 'image/png', category: 'image' });
    const webp = await seedFile(t.app, account, {
      content: await sharp({ create: { width: 512, height: 256, channels: 3, background: '#123456' } }).webp().toBuffer(),
      mimeType: 'image/webp',
      category: 'image',
    });
    const gif = await seedFile(t.app, account, {
      content: await sharp({ create: { width: 64, height: 64, channels: 3, background: '#fff' } }).gif().toBuffer(),
      mimeType: 'image/gif',
      category: 'image',
    });
    for (const file of [png, webp, gif]) publishStored(t.app, file);
    for (const file of [png, webp, gif]) await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    await expectWebpThumbnail(png, 128, 256);
    await expectWebpThumbnail(webp, 256, 128);
    await expectWebpThumbnail(gif, 64, 64);
  });

  it('takes a video thumbnail from a frame with ffmpeg', async () => {
    const file = await seedFile(t.app, account, { name: 'clip.mp4', content: mp4Video(2), mimeType: 'video/mp4', category: 'video' });
    publishStored(t.app, file);
    await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    await expectWebpThumbnail(file, 256, 192);
  });

  it('renders the first page of a PDF with pdftoppm', async () => {
    const file = await seedFile(t.app, account, { name: 'doc.pdf', content: onePagePdf(), mimeType: 'application/pdf', category: 'document' });
    publishStored(t.app, file);
    await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    const current = (await reload(t.app, file.id))!;
    const meta = await sharp(await readAll(await storage().read(current.thumbnailKey!))).metadata();
    expect(meta).toMatchObject({ format: 'webp', height: 256 });
  });

  it('makes no thumbnail for other types, but still scans them', async () => {
    const file = await seedFile(t.app, account, { name: 'notes.txt', content: 'plain text', mimeType: 'text/plain' });
    publishStored(t.app, file);
    await settledJob(scansQueue(t.app), 'scan', file);
    const { mediaJobId } = await import('../../../src/modules/media/media-jobs.js');
    expect(await thumbnailsQueue(t.app).getJob(mediaJobId('thumbnail', file.id, file.blobKey))).toBeUndefined();
    expect(await media(file.id)).toMatchObject({ thumbnailStatus: 'none', thumbnailKey: null, scanStatus: 'skipped' });
  });

  it('refuses a decompression bomb (100000 x 100000 declared) at once, without retrying, and the file stays usable', async () => {
    const bomb = hugeDeclaredPng(100_000, 100_000);
    const file = await seedFile(t.app, account, { name: 'bomb.png', content: bomb, mimeType: 'image/png', category: 'image' });
    publishStored(t.app, file);
    // Refused from the declared size alone; how fast and how little memory that takes is measured in `npm run bench`.
    const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toMatch(/pixel limit/i);

    expect(await media(file.id)).toMatchObject({ thumbnailStatus: 'failed', thumbnailKey: null, thumbnailError: expect.stringMatching(/pixel limit/i) });
    const current = (await reload(t.app, file.id))!;
    expect(current.state).toBe('active');
    expect(await readAll(await storage().read(current.blobKey))).toEqual(bomb);
    expect(await thumbnailBlobs(t.app, file)).toEqual([]);
  });

  it('fails a truncated JPEG cleanly; the file keeps its bytes', async () => {
    const jpeg = await jpegImage(800, 600);
    const cut = jpeg.subarray(0, Math.floor(jpeg.length / 2));
    const file = await seedFile(t.app, account, { name: 'cut.jpg', content: cut, mimeType: 'image/jpeg', category: 'image' });
    publishStored(t.app, file);
    const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    expect((await reload(t.app, file.id))!.thumbnailKey).toBeNull();
    expect(await readAll(await storage().read(file.blobKey))).toEqual(cut);
  });

  it('gives no thumbnail to a file deleted while its job waited', async () => {
    const queue = thumbnailsQueue(t.app);
    await queue.pause();
    try {
      const file = await seedFile(t.app, account, { content: await pngImage(), mimeType: 'image/png', category: 'image' });
      const trashed = await seedFile(t.app, account, { content: await pngImage(), mimeType: 'image/png', category: 'image' });
      publishStored(t.app, file);
      publishStored(t.app, trashed);
      await queued(queue, 2, 'both jobs to be queued');
      await t.app.get(DataSource).getRepository(FileEntity).delete({ id: file.id });
      await t.app.get(DataSource).getRepository(FileEntity).update({ id: trashed.id }, { state: 'trashed', deletedAt: new Date() });
      await queue.resume();

      expect((await settledJob(queue, 'thumbnail', file)).returnvalue).toMatchObject({ outcome: 'discarded', reason: 'the file was deleted' });
      expect((await settledJob(queue, 'thumbnail', trashed)).returnvalue).toMatchObject({ outcome: 'discarded', reason: 'the file is in the trash' });
      expect(await thumbnailBlobs(t.app, file)).toEqual([]);
      expect(await thumbnailBlobs(t.app, trashed)).toEqual([]);
      expect((await reload(t.app, trashed.id))!.thumbnailKey).toBeNull();
      expect(await media(trashed.id)).toMatchObject({ thumbnailStatus: 'deferred' });
    } finally {
      await queue.resume();
    }
  });

  it('makes the deferred thumbnail once a trashed file is restored and its stored event is published again', async () => {
    const queue = thumbnailsQueue(t.app);
    await queue.pause();
    const file = await seedFile(t.app, account, { content: await pngImage(400, 200), mimeType: 'image/png', category: 'image' });
    try {
      publishStored(t.app, file);
      await queued(queue, 1, 'the job to be queued');
      await t.app.get(DataSource).getRepository(FileEntity).update({ id: file.id }, { state: 'trashed', deletedAt: new Date() });
    } finally {
      await queue.resume();
    }
    await settledJob(queue, 'thumbnail', file);
    expect(await media(file.id)).toMatchObject({ thumbnailStatus: 'deferred', thumbnailKey: null });

    await t.app.get(DataSource).getRepository(FileEntity).update({ id: file.id }, { state: 'active', deletedAt: null });
    publishStored(t.app, file);
    await eventually(async () => (await reload(t.app, file.id))!.thumbnailKey, 10_000, 'the thumbnail after restore');
    await expectWebpThumbnail(file, 256, 128);
    expect(await media(file.id)).toMatchObject({ thumbnailStatus: 'ready' });
  });

  it.each(['before', 'after'] as const)('makes the thumbnail of a file restored while its job defers it (restore %s the deferral commits)', async (when) => {
    const queue = thumbnailsQueue(t.app);
    const handler = t.app.get(GenerateThumbnailHandler) as unknown as { defer: (job: unknown) => Promise<boolean> };
    const defer = handler.defer.bind(handler);
    let deferring: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (deferring = resolve));
    // The job holds still at its deferral for 1.5 s, before or after committing it, while the file is restored.
    const slow = vi.spyOn(handler, 'defer').mockImplementation(async (job: unknown) => {
      deferring();
      if (when === 'before') await sleep(1_500);
      const deferred = await defer(job);
      if (when === 'after') await sleep(1_500);
      return deferred;
    });
    await queue.pause();
    const file = await seedFile(t.app, account, { content: await pngImage(300, 300), mimeType: 'image/png', category: 'image' });
    try {
      publishStored(t.app, file);
      await queued(queue, 1, 'the job to be queued');
      await t.app.get(DataSource).getRepository(FileEntity).update({ id: file.id }, { state: 'trashed', deletedAt: new Date() });
      await queue.resume();
      await reached;
      if (when === 'after') await eventually(async () => (await media(file.id))?.thumbnailStatus === 'deferred', 5_000, 'the deferral');
      await t.app.get(DataSource).getRepository(FileEntity).update({ id: file.id }, { state: 'active', deletedAt: null });
      publishStored(t.app, file);
      await eventually(async () => (await reload(t.app, file.id))!.thumbnailKey, 15_000, 'the thumbnail after restore');
      expect(await media(file.id)).toMatchObject({ thumbnailStatus: 'ready' });
    } finally {
      slow.mockRestore();
      await queue.resume();
    }
  });

  it('shows no stale thumbnail after an overwrite: the old one goes, the new version gets its own', async () => {
    const file = await seedFile(t.app, account, { content: await jpegImage(800, 600), mimeType: 'image/jpeg', category: 'image' });
    publishStored(t.app, file);
    await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    const oldThumbnail = thumbnailOf(file);
    expect((await reload(t.app, file.id))!.thumbnailKey).toBe(oldThumbnail);

    const queue = thumbnailsQueue(t.app);
    await queue.pause();
    let replaced: FileEntity;
    try {
      replaced = await overwrite(t.app, file, await pngImage(200, 400), 'image/png');
      publishStored(t.app, replaced);
      // Until the new thumbnail exists the file shows none, never the old picture.
      await eventually(async () => (await reload(t.app, file.id))!.thumbnailKey === null, 20_000, 'the stale thumbnail to be cleared');
      expect(await storage().exists(oldThumbnail)).toBe(false);
    } finally {
      await queue.resume();
    }
    await settledJob(queue, 'thumbnail', replaced);
    await expectWebpThumbnail(replaced, 128, 256);
    expect(await thumbnailBlobs(t.app, file)).toEqual([thumbnailOf(replaced)]);
  });

  it('discards a thumbnail rendered for bytes overwritten while its job waited', async () => {
    const queue = thumbnailsQueue(t.app);
    await queue.pause();
    let file: FileEntity;
    let replaced: FileEntity;
    try {
      file = await seedFile(t.app, account, { content: await jpegImage(640, 480), mimeType: 'image/jpeg', category: 'image' });
      publishStored(t.app, file);
      await queued(queue, 1, 'the job to be queued');
      replaced = await overwrite(t.app, file, await pngImage(100, 100), 'image/png');
      publishStored(t.app, replaced);
    } finally {
      await queue.resume();
    }
    expect((await settledJob(queue, 'thumbnail', file!)).returnvalue).toMatchObject({ outcome: 'discarded', reason: 'the file was overwritten with newer content' });
    await settledJob(queue, 'thumbnail', replaced!);
    await expectWebpThumbnail(replaced!, 100, 100);
    expect(await thumbnailBlobs(t.app, file!)).toEqual([thumbnailOf(replaced!)]);
  });

  it('drops the thumbnail when an image is overwritten with something that gets none', async () => {
    const file = await seedFile(t.app, account, { content: await pngImage(), mimeType: 'image/png', category: 'image' });
    publishStored(t.app, file);
    await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    const replaced = await overwrite(t.app, file, Buffer.from('now a text'), 'text/plain');
    publishStored(t.app, replaced);
    await settledJob(scansQueue(t.app), 'scan', replaced);
    expect(await media(file.id)).toMatchObject({ thumbnailKey: null, thumbnailStatus: 'none' });
    expect(await thumbnailBlobs(t.app, file)).toEqual([]);
  });

  it('re-running a thumbnail job changes nothing (idempotent)', async () => {
    const file = await seedFile(t.app, account, { content: await pngImage(), mimeType: 'image/png', category: 'image' });
    publishStored(t.app, file);
    const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    await job.retry('completed');
    const again = await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    expect(again.returnvalue).toMatchObject({ outcome: 'created' });
    expect(await thumbnailBlobs(t.app, file)).toEqual([thumbnailOf(file)]);
    expect((await reload(t.app, file.id))!.thumbnailKey).toBe(thumbnailOf(file));
  });

  it('scheduling a version whose thumbnail is made again, once its finished job left Redis, keeps the thumbnail and fails no attempt', async () => {
    // As the stalled-media sweep does for a file whose scan waits for clamd, after the completed job was evicted.
    const file = await seedFile(t.app, account, { content: await pngImage(), mimeType: 'image/png', category: 'image' });
    publishStored(t.app, file);
    const queue = thumbnailsQueue(t.app);
    const first = await settledJob(queue, 'thumbnail', file);
    const made = await readAll(await storage().read(thumbnailOf(file)));
    await first.remove();
    const deleted = vi.spyOn(storage(), 'delete');
    try {
      publishStored(t.app, file);
      const again = await settledJob(queue, 'thumbnail', file);
      expect(again.stacktrace).toEqual([]);
      expect(deleted).not.toHaveBeenCalledWith(thumbnailOf(file));
    } finally {
      deleted.mockRestore();
    }
    expect(await readAll(await storage().read(thumbnailOf(file)))).toEqual(made);
    expect((await reload(t.app, file.id))!.thumbnailKey).toBe(thumbnailOf(file));
  });

  it('reports ffmpeg and pdftoppm in /health', async () => {
    const res = await t.http().get('/health');
    expect(res.status).toBe(200);
    expect(res.body.data.info.media).toMatchObject({
      status: 'up',
      ffmpeg: { available: true, version: expect.stringMatching(/^ffmpeg version/) },
      pdftoppm: { available: true, version: expect.stringMatching(/pdftoppm version/) },
    });
  });
});

describe('thumbnails without ffmpeg and pdftoppm', () => {
  let t: TestApp;
  const media = (fileId: string) => t.app.get(QueryBus).execute(new GetFileMediaQuery(fileId));

  beforeAll(async () => {
    t = await startTestApp({ FFMPEG_PATH: '/nonexistent/ffmpeg', PDFTOPPM_PATH: '/nonexistent/pdftoppm' });
  });
  afterAll(() => t?.close());

  it('keeps /health at 200 and names what is missing', async () => {
    const res = await t.http().get('/health');
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('ok');
    expect(res.body.data.info.media).toMatchObject({ status: 'up', degraded: true, ffmpeg: { available: false }, pdftoppm: { available: false } });
  });

  it('skips video and PDF thumbnails saying which tool is not installed, fails no job, and still makes image thumbnails', async () => {
    const account = await createAccount(t.app);
    const video = await seedFile(t.app, account, { content: mp4Video(1), mimeType: 'video/mp4', category: 'video' });
    const pdf = await seedFile(t.app, account, { content: onePagePdf(), mimeType: 'application/pdf', category: 'document' });
    const image = await seedFile(t.app, account, { content: await pngImage(), mimeType: 'image/png', category: 'image' });
    for (const file of [video, pdf, image]) publishStored(t.app, file);
    for (const [file, tool] of [[video, 'ffmpeg'], [pdf, 'pdftoppm']] as const) {
      const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
      expect(await job.getState()).toBe('completed');
      expect(job.returnvalue).toMatchObject({ outcome: 'skipped', reason: expect.stringContaining(`${tool} is not installed`) });
      expect(await media(file.id)).toMatchObject({ thumbnailStatus: 'skipped', thumbnailKey: null, thumbnailError: expect.stringContaining(`${tool} is not installed`) });
    }
    expect(await thumbnailsQueue(t.app).getFailedCount()).toBe(0);
    await settledJob(thumbnailsQueue(t.app), 'thumbnail', image);
    expect((await reload(t.app, image.id))!.thumbnailKey).not.toBeNull();
  });
});
