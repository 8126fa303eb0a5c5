import { CommandBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { RescheduleStalledMediaCommand } from '../../../src/modules/media/commands/reschedule-stalled-media.command.js';
import { STALLED_MEDIA_SWEEP } from '../../../src/modules/media/media-jobs.js';
import { createAccount } from '../../support/accounts.js';
import { seedFile } from '../../support/files.js';
import { pngImage } from '../../support/media.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
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
});
