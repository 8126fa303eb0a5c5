import { CommandBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { PurgeTrashCommand } from '../../../src/modules/trash/commands/purge-trash.command.js';
import type { TestAccount } from '../../support/accounts.js';
import { pngImage } from '../../support/media.js';
import { type ServerProcess, startServerProcess } from '../../support/processes.js';
import type { TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';
import { scanSettled } from '../../support/files.js';
import { uploadOk } from '../../support/uploads.js';

const DAY = 86_400_000;

/**
 * total_items is remembered between requests (until the account's files change), so every kind of
 * change is made right after a listing has been answered, and the next listing must count it.
 */
describe('listing totals after every kind of change', () => {
  let t: TestApp;
  let owner: TestAccount;
  let folderId: string;

  useTestApp((started) => ({ t, owner } = started));
  beforeAll(async () => {
    folderId = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Elsewhere' })).body.data.id;
    for (let i = 0; i < 3; i++) await uploadOk(t, owner.auth, `seed ${i}`, { name: `seed-${i}.txt` });
  });

  const total = async (query = '', baseUrl = t.baseUrl) => {
    const res = await fetch(`${baseUrl}/v1/files?${query}`, { headers: owner.auth });
    expect(res.status).toBe(200);
    return ((await res.json()) as { pagination: { total_items: number } }).pagination.total_items;
  };

  it('counts an upload, a trash, a restore and a permanent delete at once', async () => {
    expect(await total()).toBe(3);
    const file = await uploadOk(t, owner.auth, 'new', { name: 'counted.txt' });
    expect(await total()).toBe(4);
    await t.http().delete(`/v1/files/${file.id}`).set(owner.auth).expect(200);
    expect(await total()).toBe(3);
    await t.http().post(`/v1/files/${file.id}/restore`).set(owner.auth).expect(200);
    expect(await total()).toBe(4);
    await t.http().delete(`/v1/files/${file.id}?permanent=true`).set(owner.auth).expect(200);
    expect(await total()).toBe(3);
  });

  it('counts a move in both folders, and a rename in and out of a search', async () => {
    const file = await uploadOk(t, owner.auth, 'moving', { name: 'mover.txt' });
    expect([await total(), await total(`folder_id=${folderId}`), await total('search=zebra')]).toEqual([4, 0, 0]);
    await t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ folder_id: folderId }).expect(200);
    expect([await total(), await total(`folder_id=${folderId}`)]).toEqual([3, 1]);
    await t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ folder_id: null, name: 'Zebra.txt' }).expect(200);
    expect([await total(), await total(`folder_id=${folderId}`), await total('search=zebra')]).toEqual([4, 0, 1]);
    await t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ name: 'horse.txt' }).expect(200);
    expect(await total('search=zebra')).toBe(0);
    await t.http().delete(`/v1/files/${file.id}?permanent=true`).set(owner.auth).expect(200);
  });

  it('counts a category change by overwrite under a type filter', async () => {
    const image = await uploadOk(t, owner.auth, await pngImage(8, 8), { name: 'shape-shifter.bin' });
    expect(await total('type=image')).toBe(1);
    await uploadOk(t, owner.auth, 'now plain text', { name: 'shape-shifter.bin', overwrite: true });
    expect(await total('type=image')).toBe(0);
    await t.http().delete(`/v1/files/${image.id}?permanent=true`).set(owner.auth).expect(200);
  });

  it('counts quarantine and release, and a purge leaves the total as it was', async () => {
    const suspect = await uploadOk(t, owner.auth, 'suspect', { name: 'suspect.txt' });
    const files = t.app.get(DataSource).getRepository(FileEntity);
    // Let the upload's own background scan settle, so its verdict cannot overwrite ours.
    await scanSettled(t.app, suspect.id);
    expect(await total()).toBe(4);
    await files.update({ id: suspect.id }, { scanStatus: 'infected' });
    expect(await total()).toBe(3);
    await files.update({ id: suspect.id }, { scanStatus: 'clean' });
    expect(await total()).toBe(4);

    const doomed = await uploadOk(t, owner.auth, 'doomed', { name: 'doomed.txt' });
    await t.http().delete(`/v1/files/${doomed.id}`).set(owner.auth).expect(200);
    await t.http().delete(`/v1/files/${suspect.id}`).set(owner.auth).expect(200);
    await t.http().post(`/v1/files/${suspect.id}/restore`).set(owner.auth).expect(200);
    expect(await total()).toBe(4);
    const { purged } = await t.app.get(CommandBus).execute(new PurgeTrashCommand(new Date(Date.now() + 31 * DAY)));
    expect(purged).toBeGreaterThanOrEqual(1);
    expect(await total()).toBe(4);
    expect((await t.http().get(`/v1/files/${doomed.id}`).set(owner.auth)).status).toBe(404);
  });

  describe('with a second server process on the same database', () => {
    let other: ServerProcess;
    beforeAll(async () => {
      other = await startServerProcess(t.environment.env);
    });
    afterAll(() => other?.stop());

    it('each process counts what the other changed', async () => {
      const before = await total();
      expect(await total('', other.baseUrl)).toBe(before);
      const file = await uploadOk({ ...t, baseUrl: other.baseUrl }, owner.auth, 'elsewhere', { name: 'from-the-other-process.txt' });
      expect(await total()).toBe(before + 1);
      await t.http().delete(`/v1/files/${file.id}`).set(owner.auth).expect(200);
      expect(await total('', other.baseUrl)).toBe(before);
      expect(await total()).toBe(before);
    });
  });
});
