import { CommandBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { FileMediaEntity } from '../../../src/modules/media/file-media.entity.js';
import { RescheduleStalledMediaCommand } from '../../../src/modules/media/commands/reschedule-stalled-media.command.js';
import { STALLED_MEDIA_SWEEP } from '../../../src/modules/media/media-jobs.js';
import { createAccount } from '../../support/accounts.js';
import { seedFile } from '../../support/files.js';
import { pngImage } from '../../support/media.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { uploadOk } from '../../support/uploads.js';
import { reload, scansQueue, settledJob, thumbnailsQueue } from './media-support.js';
import { eventually } from '../../support/time.js';

describe('the sweep for media work whose event was lost', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  it('is scheduled on the scans queue when the server starts', async () => {
    await eventually(() => scansQueue(t.app).getJobScheduler(STALLED_MEDIA_SWEEP), 20_000, 'the sweep schedule');
  });

  it('queues scans and thumbnails for files left pending for long, and leaves fresh ones alone', async () => {
    const account = await createAccount(t.app);
    const files = t.app.get(DataSource).getRepository(FileEntity);
    // As after a crash between the upload's commit and its event: pending, never queued.
    const lost = await seedFile(t.app, account, { content: await pngImage(), mimeType: 'image/png', category: 'image' });
    const fresh = await seedFile(t.app, account, { content: 'just uploaded' });
    await files.update({ id: lost.id }, { scanStatus: 'pending', modifiedAt: new Date(Date.now() - 3600_000) });
    await files.update({ id: fresh.id }, { scanStatus: 'pending' });

    const result = await t.app.get(CommandBus).execute(new RescheduleStalledMediaCommand());
    expect(result.scheduled).toBe(1);
    await settledJob(scansQueue(t.app), 'scan', lost);
    await settledJob(thumbnailsQueue(t.app), 'thumbnail', lost);
    expect(await reload(t.app, lost.id)).toMatchObject({ scanStatus: 'skipped', thumbnailKey: expect.any(String) });
    expect((await reload(t.app, fresh.id))!.scanStatus).toBe('pending');

    // Running it again finds nothing left to do.
    expect((await t.app.get(CommandBus).execute(new RescheduleStalledMediaCommand())).scheduled).toBe(0);
  });

  it('queues the thumbnail of an upload whose scan was settled without a job but whose thumbnail job was lost', async () => {
    // No scanner here: the relay records "skipped" with the media row, then queues the thumbnail, which Redis refuses once.
    const account = await createAccount(t.app);
    const addBulk = vi.spyOn(thumbnailsQueue(t.app), 'addBulk').mockRejectedValueOnce(new Error('Redis went away for a moment'));
    let uploaded: { id: string };
    try {
      uploaded = await uploadOk(t, account.auth, await pngImage(), { name: 'lost-thumbnail.png' });
      await eventually(async () => addBulk.mock.calls.length > 0 && (await reload(t.app, uploaded.id))!.scanStatus === 'skipped', 20_000, 'the relay to schedule the upload');
    } finally {
      addBulk.mockRestore();
    }
    const dataSource = t.app.get(DataSource);
    const longAgo = new Date(Date.now() - 3600_000);
    await dataSource.getRepository(FileEntity).update({ id: uploaded.id }, { modifiedAt: longAgo });
    await dataSource.getRepository(FileMediaEntity).update({ fileId: uploaded.id }, { updatedAt: longAgo });

    expect((await t.app.get(CommandBus).execute(new RescheduleStalledMediaCommand())).scheduled).toBe(1);
    await settledJob(thumbnailsQueue(t.app), 'thumbnail', (await reload(t.app, uploaded.id))!);
    expect((await reload(t.app, uploaded.id))!.thumbnailKey).toEqual(expect.any(String));
    expect((await t.app.get(CommandBus).execute(new RescheduleStalledMediaCommand())).scheduled).toBe(0);
  });
});
