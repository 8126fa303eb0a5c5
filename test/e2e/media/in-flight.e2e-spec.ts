import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { QueryBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobStorage } from '../../../src/infra/storage/blob-storage.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { mediaJobId } from '../../../src/modules/media/media-jobs.js';
import { GetFileMediaQuery } from '../../../src/modules/media/queries/get-file-media.query.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { seedFile } from '../../support/files.js';
import { mp4Video, pngImage } from '../../support/media.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { overwrite, publishStored, reload, settledJob, thumbnailsQueue, thumbnailBlobs } from './media-support.js';
import { eventually } from '../../support/time.js';

/**
 * Changes that land while a job is already running: ffmpeg is wrapped in a script that waits a
 * second first, so the file can be deleted or overwritten between rendering and recording.
 */
describe('media jobs racing deletes, overwrites and storage failures', () => {
  let t: TestApp;
  let account: TestAccount;

  const scripts = mkdtempSync(join(tmpdir(), 'fss-slow-ffmpeg-'));
  const started = join(scripts, 'render-started');

  beforeAll(async () => {
    const slowFfmpeg = join(scripts, 'slow-ffmpeg');
    // Leaves a mark when a render starts (not for the start-up `-version` probe), then stalls a second.
    writeFileSync(slowFfmpeg, `#!/bin/sh\n[ "$1" = "-version" ] && exec ffmpeg "$@"\ntouch ${JSON.stringify(started)}\nsleep 1\nexec ffmpeg "$@"\n`);
    chmodSync(slowFfmpeg, 0o755);
    t = await startTestApp({ MEDIA_RETRY_DELAY_MS: '100', FFMPEG_PATH: slowFfmpeg });
    account = await createAccount(t.app);
  });
  afterAll(async () => {
    await t?.close();
    rmSync(scripts, { recursive: true, force: true });
  });

  /** Resolves once ffmpeg has been started for the file, i.e. the job has checked the file and is rendering. */
  const whenRendering = async () => {
    await eventually(async () => existsSync(started), 10_000, 'the render to start');
    rmSync(started, { force: true });
  };

  it('a file deleted while its thumbnail renders gets none, and the rendered thumbnail is removed', async () => {
    const file = await seedFile(t.app, account, { content: mp4Video(2), mimeType: 'video/mp4', category: 'video' });
    publishStored(t.app, file);
    await whenRendering();
    await t.app.get(DataSource).getRepository(FileEntity).delete({ id: file.id });
    const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    expect(job.returnvalue).toMatchObject({ outcome: 'discarded', reason: 'the file was deleted' });
    expect(job.finishedOn! - job.processedOn!).toBeGreaterThanOrEqual(1000);
    expect(await thumbnailBlobs(t.app, file)).toEqual([]);
  });

  it('a file overwritten while its thumbnail renders does not get the stale picture', async () => {
    const file = await seedFile(t.app, account, { content: mp4Video(2), mimeType: 'video/mp4', category: 'video' });
    publishStored(t.app, file);
    await whenRendering();
    await overwrite(t.app, file, Buffer.from('a text now'), 'text/plain');
    const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    expect(job.returnvalue).toMatchObject({ outcome: 'discarded', reason: 'the file was overwritten with newer content' });
    expect((await reload(t.app, file.id))!.thumbnailKey).toBeNull();
    expect(await thumbnailBlobs(t.app, file)).toEqual([]);
  });

  it('retries with backoff while the stored bytes cannot be read, and succeeds once they can', async () => {
    const content = await pngImage(300, 300);
    const file = await seedFile(t.app, account, { content, mimeType: 'image/png', category: 'image' });
    const storage = t.app.get(BlobStorage);
    await storage.delete(file.blobKey); // the row still points at it: a storage fault, not a deletion
    publishStored(t.app, file);
    const queue = thumbnailsQueue(t.app);
    await eventually(async () => ((await queue.getJob(mediaJobId('thumbnail', file.id, file.blobKey)))?.attemptsMade ?? 0) >= 2, 10_000, 'two failed attempts');
    await storage.write(file.blobKey, Readable.from([content]));
    const job = await settledJob(queue, 'thumbnail', file);
    expect(job.returnvalue).toMatchObject({ outcome: 'created' });
    expect(job.attemptsMade).toBeGreaterThan(2);
    expect((await reload(t.app, file.id))!.thumbnailKey).not.toBeNull();
  });

  it('gives up after the last retry and records the thumbnail as failed', async () => {
    const file = await seedFile(t.app, account, { content: await pngImage(50, 50), mimeType: 'image/png', category: 'image' });
    await t.app.get(BlobStorage).delete(file.blobKey);
    publishStored(t.app, file);
    const job = await settledJob(thumbnailsQueue(t.app), 'thumbnail', file);
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(5);
    await eventually(async () => (await t.app.get(QueryBus).execute(new GetFileMediaQuery(file.id)))?.thumbnailStatus === 'failed', 20_000, 'the failure to be recorded');
    expect((await reload(t.app, file.id))!.state).toBe('active');
  });
});
