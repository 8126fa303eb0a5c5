import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import type { TestAccount } from '../../support/accounts.js';
import { pngImage } from '../../support/media.js';
import type { TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';
import { onTestServer, uploadOk } from '../../support/uploads.js';
import { queued, settledJob, thumbnailsQueue } from './media-support.js';
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
});
