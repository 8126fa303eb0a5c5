import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandBus } from '@nestjs/cqrs';
import { newId } from '../../../src/common/ids.js';
import { insertRows } from '../../../src/infra/database/insert-rows.js';
import { BlobStorage, blobKeys } from '../../../src/infra/storage/blob-storage.js';
import { databaseCounts } from '../../../src/infra/database/statement-counter.js';
import { OutboxEventEntity } from '../../../src/infra/outbox/outbox-event.entity.js';
import { AccountEntity } from '../../../src/modules/accounts/account.entity.js';
import { FolderEntity } from '../../../src/modules/folders/folder.entity.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { ShareEntity } from '../../../src/modules/shares/share.entity.js';
import { PURGE_BATCH, PurgeTrashCommand } from '../../../src/modules/trash/commands/purge-trash.command.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { insertFolderChain } from '../../support/folders.js';
import { seedFile } from '../../support/files.js';
import { startHoldableProxy, type HoldableProxy } from '../../support/holdable-proxy.js';
import { runNode } from '../../support/processes.js';
import { queueBehindRowLock } from '../../support/row-lock.js';
import { startS3, type TestS3 } from '../../support/s3.js';
import { startTestApp, TEST_DB, type TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';
import { eventually, sleep } from '../../support/time.js';
import { listBlobs, uploadOk } from '../../support/uploads.js';

const DAY = 86_400_000;

describe('delete, restore and the trash', () => {
  let t: TestApp;
  let owner: TestAccount;
  const db = () => t.app.get(DataSource);
  const account = (id: string) => db().getRepository(AccountEntity).findOneByOrFail({ id });
  const deletedEvents = async (accountId: string) =>
    (await db().getRepository(OutboxEventEntity).find({ where: { accountId, event: 'file.deleted' }, order: { occurredAt: 'ASC' } })).map((e) => JSON.parse(e.payload).file);
  const share = (accountId: string, userId: string, fileId: string) =>
    db().getRepository(ShareEntity).insert({
      id: newId('shr'), accountId, fileId, token: newId('shr'), passwordHash: null, expiresAt: null, createdBy: userId,
      createdAt: new Date(), revokedAt: null, invalidatedAt: null, accessCount: 0, lastAccessedAt: null,
    });

  useTestApp((started) => ({ t, owner } = started));

  it('moves a file to the trash: 30-day window, shares invalidated, storage kept, file.deleted recorded', async () => {
    const file = await uploadOk(t, owner.auth, 'to trash', { name: 'trash-me.txt' });
    await share(owner.accountId, owner.userId, file.id);
    const used = (await account(owner.accountId)).storageUsed;
    const res = await t.http().delete(`/v1/files/${file.id}`).set(owner.auth);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: file.id, name: 'trash-me.txt', deleted_at: expect.any(String), recoverable_until: expect.any(String) });
    expect(Date.parse(res.body.data.recoverable_until) - Date.parse(res.body.data.deleted_at)).toBe(30 * DAY);
    expect((await account(owner.accountId)).storageUsed).toBe(used);
    expect((await db().getRepository(ShareEntity).findOneByOrFail({ fileId: file.id })).invalidatedAt).not.toBeNull();
    expect((await deletedEvents(owner.accountId)).find((e) => e.id === file.id)).toEqual({
      id: file.id, name: 'trash-me.txt', deleted_by: owner.userId, deleted_at: res.body.data.deleted_at, permanent: false,
    });
    const again = await t.http().delete(`/v1/files/${file.id}`).set(owner.auth);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('not_found');
    expect((await t.http().delete('/v1/files/file_nope').set(owner.auth)).status).toBe(404);
    expect((await t.http().delete(`/v1/files/${file.id}?permanent=yes`).set(owner.auth)).status).toBe(400);
  });

  it('deletes permanently only with an elevated key, freeing storage and the blob', async () => {
    const file = await uploadOk(t, owner.auth, 'forever', { name: 'forever.txt' });
    await share(owner.accountId, owner.userId, file.id);
    const plain = await createKey(t.app, owner, ['read', 'write', 'delete']);
    const refused = await t.http().delete(`/v1/files/${file.id}?permanent=true`).set(plain.auth);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('permission_denied');
    const used = (await account(owner.accountId)).storageUsed;
    const res = await t.http().delete(`/v1/files/${file.id}?permanent=true`).set(owner.auth);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: file.id, name: 'forever.txt', deleted_at: expect.any(String), recoverable_until: null });
    expect((await account(owner.accountId)).storageUsed).toBe(used - 7);
    expect(listBlobs(t, blobKeys.filePrefix(owner.accountId, file.id))).toEqual([]);
    expect(await db().getRepository(FileEntity).findOneBy({ id: file.id })).toBeNull();
    expect((await db().getRepository(ShareEntity).findOneByOrFail({ fileId: file.id })).invalidatedAt).not.toBeNull();
    expect((await deletedEvents(owner.accountId)).find((e) => e.id === file.id)).toMatchObject({ permanent: true, deleted_by: owner.userId });
    expect((await t.http().delete(`/v1/files/${file.id}?permanent=true`).set(owner.auth)).status).toBe(404);
    // A trashed file can be deleted for good too, and a key without delete scope cannot delete at all.
    const trashed = await uploadOk(t, owner.auth, 'x', { name: 'later.txt' });
    await t.http().delete(`/v1/files/${trashed.id}`).set(owner.auth);
    expect((await t.http().delete(`/v1/files/${trashed.id}?permanent=true`).set(owner.auth)).status).toBe(200);
    const reader = await createKey(t.app, owner, ['read', 'write'], true);
    expect((await t.http().delete(`/v1/files/${file.id}`).set(reader.auth)).status).toBe(403);
  });

  it('bulk-deletes in order, reporting each failure, total = deleted_count + failed_count', async () => {
    const a = await uploadOk(t, owner.auth, 'a', { name: 'bulk-a.txt' });
    const b = await uploadOk(t, owner.auth, 'b', { name: 'bulk-b.txt' });
    const other = await createAccount(t.app);
    const foreign = await uploadOk(t, other.auth, 'f', { name: 'foreign.txt' });
    const ids = [a.id, 'file_missing', b.id, a.id, foreign.id];
    const res = await t.http().post('/v1/files/bulk-delete').set(owner.auth).send({ file_ids: ids });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      deleted: [a.id, b.id],
      failed: [
        { id: 'file_missing', error: { code: 'not_found', message: expect.any(String) } },
        { id: a.id, error: { code: 'not_found', message: expect.any(String) } },
        { id: foreign.id, error: { code: 'not_found', message: expect.any(String) } },
      ],
      total: 5,
      deleted_count: 2,
      failed_count: 3,
    });
    const events = (await deletedEvents(owner.accountId)).filter((e) => e.id === a.id || e.id === b.id);
    expect(events.map((e) => [e.id, e.permanent])).toEqual([[a.id, false], [b.id, false]]);
    expect((await t.http().get(`/v1/files/${foreign.id}`).set(other.auth)).status).toBe(200);
  });

  it.each([
    ['no file_ids', {}],
    ['an empty list', { file_ids: [] }],
    ['1001 ids', { file_ids: Array.from({ length: 1001 }, (_, i) => `file_${i}`) }],
    ['a non-list', { file_ids: 'file_1' }],
    ['non-string ids', { file_ids: [1, 2] }],
  ])('refuses bulk delete with %s', async (_label, body) => {
    const res = await t.http().post('/v1/files/bulk-delete').set(owner.auth).send(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
  });

  it('accepts 1000 ids in one bulk delete', async () => {
    const res = await t.http().post('/v1/files/bulk-delete').set(owner.auth).send({ file_ids: Array.from({ length: 1000 }, (_, i) => `file_x${i}`) });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ total: 1000, deleted_count: 0, failed_count: 1000 });
  });

  it('restores into the original folder, or the root when the folder is gone, numbering a taken name', async () => {
    const folder = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Keep' })).body.data;
    const file = await uploadOk(t, owner.auth, 'r', { name: 'restore-me.txt', folderId: folder.id });
    await share(owner.accountId, owner.userId, file.id);
    await t.http().delete(`/v1/files/${file.id}`).set(owner.auth);
    await uploadOk(t, owner.auth, 'squatter', { name: 'RESTORE-ME.txt', folderId: folder.id });
    const res = await t.http().post(`/v1/files/${file.id}/restore`).set(owner.auth);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: file.id, name: 'restore-me (1).txt', restored_at: expect.any(String), folder_id: folder.id });
    const back = (await t.http().get(`/v1/files/${file.id}`).set(owner.auth)).body.data;
    expect(back).toMatchObject({ name: 'restore-me (1).txt', folder_id: folder.id, is_shared: false });
    expect((await t.http().post(`/v1/files/${file.id}/restore`).set(owner.auth)).status).toBe(404);
    expect((await t.http().post('/v1/files/file_nope/restore').set(owner.auth)).status).toBe(404);

    const orphan = await uploadOk(t, owner.auth, 'o', { name: 'orphan.txt', folderId: folder.id });
    await t.http().delete(`/v1/files/${orphan.id}`).set(owner.auth);
    await t.http().delete(`/v1/folders/${folder.id}`).set(owner.auth);
    // A restore into a folder of the caller's choosing is refused, not done elsewhere: the file stays in the trash.
    const elsewhere = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Elsewhere' })).body.data;
    const intoQuery = await t.http().post(`/v1/files/${orphan.id}/restore?folder_id=${elsewhere.id}`).set(owner.auth);
    expect(intoQuery.status).toBe(400);
    expect(intoQuery.body.error.details.fields).toEqual([{ field: 'folder_id', message: 'is not allowed' }]);
    const intoBody = await t.http().post(`/v1/files/${orphan.id}/restore`).set(owner.auth).send({ folder_id: elsewhere.id });
    expect(intoBody.status).toBe(400);
    expect(intoBody.body.error.details.fields).toEqual([{ field: 'folder_id', message: 'is not allowed' }]);
    expect((await t.http().get(`/v1/files/${orphan.id}`).set(owner.auth)).status).toBe(404);
    const toRoot = await t.http().post(`/v1/files/${orphan.id}/restore`).set(owner.auth).send({});
    expect(toRoot.body.data).toMatchObject({ id: orphan.id, folder_id: null, name: 'orphan.txt' });
    const reader = await createKey(t.app, owner, ['read', 'delete']);
    expect((await t.http().post(`/v1/files/${orphan.id}/restore`).set(reader.auth)).status).toBe(403);
  });

  it('deletes a folder of thousands of files: all of them to the trash, each with its file.deleted', async () => {
    // 6,600 events of 5 columns each are more bound parameters than SQLite takes in one statement (32,766).
    const count = 6_600;
    const acct = await createAccount(t.app);
    const folder = (await t.http().post('/v1/folders').set(acct.auth).send({ name: 'Camera roll' })).body.data;
    const now = new Date().toISOString();
    const rows = Array.from({ length: count }, (_, i) => {
      const id = newId('file');
      return {
        id, account_id: acct.accountId, folder_id: folder.id, folder_key: folder.id, name: `IMG_${i}.jpg`, name_key: `img_${i}.jpg`, size: 1,
        mime_type: 'image/jpeg', category: 'image', md5: '0'.repeat(32), blob_key: blobKeys.file(acct.accountId, id, newId('upl')), state: 'active',
        scan_status: 'clean', thumbnail_key: null, uploaded_by: acct.userId, created_at: now, modified_at: now, deleted_at: null, deleted_by: null, recoverable_until: null,
      };
    });
    await db().transaction(async (tx) => {
      for (let i = 0; i < rows.length; i += 1_000) await insertRows(tx, 'files', rows.slice(i, i + 1_000));
    });
    await share(acct.accountId, acct.userId, rows[count - 1].id);

    const res = await t.http().delete(`/v1/folders/${folder.id}`).set(acct.auth);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ folders_deleted: 1, files_deleted: count });
    const trash = await t.http().get('/v1/trash?per_page=1').set(acct.auth);
    expect(trash.body.pagination.total_items).toBe(count);
    expect(trash.body.data[0]).toMatchObject({ folder_id: folder.id, deleted_at: res.body.data.deleted_at });
    expect((await db().getRepository(ShareEntity).findOneByOrFail({ fileId: rows[count - 1].id })).invalidatedAt).not.toBeNull();
    expect(await db().getRepository(OutboxEventEntity).countBy({ accountId: acct.accountId, event: 'file.deleted' })).toBe(count);
  });

  it('lists the trash newest deletion first (or oldest), with search and pagination', async () => {
    const acct = await createAccount(t.app);
    const ids: string[] = [];
    for (const name of ['t1.txt', 't2.txt', 'T3-special.txt', 't4.txt']) {
      const f = await uploadOk(t, acct.auth, name, { name });
      await t.http().delete(`/v1/files/${f.id}`).set(acct.auth);
      ids.push(f.id);
      await sleep(3);
    }
    await uploadOk(t, acct.auth, 'alive', { name: 'alive.txt' });
    const desc = await t.http().get('/v1/trash?per_page=3').set(acct.auth);
    expect(desc.body.pagination).toEqual({ page: 1, per_page: 3, total_items: 4, total_pages: 2, next_cursor: expect.any(String) });
    expect(desc.body.data.map((f: any) => f.id)).toEqual([ids[3], ids[2], ids[1]]);
    expect(desc.body.data[0]).toEqual({
      id: ids[3], name: 't4.txt', size: 6, type: 'text/plain', category: 'document', folder_id: null,
      deleted_at: expect.any(String), recoverable_until: expect.any(String),
    });
    const asc = await t.http().get('/v1/trash?sort=deleted_asc').set(acct.auth);
    expect(asc.body.data.map((f: any) => f.id)).toEqual(ids);
    const search = await t.http().get('/v1/trash?search=special').set(acct.auth);
    expect(search.body.data.map((f: any) => f.name)).toEqual(['T3-special.txt']);
    expect((await t.http().get('/v1/trash?sort=name_asc').set(acct.auth)).status).toBe(400);
    expect((await t.http().get('/v1/trash?page=2&page=3').set(acct.auth)).status).toBe(400);
    const writer = await createKey(t.app, acct, ['write']);
    expect((await t.http().get('/v1/trash').set(writer.auth)).status).toBe(403);
  });

  it('empties the trash with an elevated key, freeing storage', async () => {
    const acct = await createAccount(t.app);
    const files = [];
    for (let i = 0; i < 3; i++) files.push(await uploadOk(t, acct.auth, 'x'.repeat(10 + i), { name: `e${i}.txt` }));
    const keep = await uploadOk(t, acct.auth, 'keep', { name: 'keep.txt' });
    for (const f of files) await t.http().delete(`/v1/files/${f.id}`).set(acct.auth);
    const plain = await createKey(t.app, acct, ['read', 'write', 'delete']);
    expect((await t.http().delete('/v1/trash').set(plain.auth)).status).toBe(403);
    // A parameter is refused, not ignored: `?file_id=` reads like deleting one file, and would empty the whole trash.
    const oneFile = await t.http().delete(`/v1/trash?file_id=${files[0].id}`).set(acct.auth);
    expect(oneFile.status).toBe(400);
    expect(oneFile.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['file_id']);
    // So is a body naming some files, as bulk delete's does.
    const someFiles = await t.http().delete('/v1/trash').set(acct.auth).send({ file_ids: [files[0].id] });
    expect(someFiles.status).toBe(400);
    expect(someFiles.body.error.details.fields).toEqual([{ field: 'file_ids', message: 'is not allowed' }]);
    expect((await t.http().delete('/v1/trash').set(acct.auth).send([files[0].id])).status).toBe(400);
    expect((await t.http().get('/v1/trash').set(acct.auth)).body.data).toHaveLength(3);
    const res = await t.http().delete('/v1/trash').set(acct.auth).send({});
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ deleted_count: 3, freed_bytes: 33 });
    expect((await account(acct.accountId)).storageUsed).toBe(4);
    expect(listBlobs(t, `files/${acct.accountId}`)).toHaveLength(1);
    expect((await t.http().get('/v1/trash').set(acct.auth)).body.data).toEqual([]);
    expect((await t.http().get(`/v1/files/${keep.id}`).set(acct.auth)).status).toBe(200);
    expect((await deletedEvents(acct.accountId)).filter((e) => e.permanent).map((e) => e.id).sort()).toEqual(files.map((f) => f.id).sort());
    expect((await t.http().delete('/v1/trash').set(acct.auth)).body.data).toEqual({ deleted_count: 0, freed_bytes: 0 });
  });

  it('empties the whole trash when PostgreSQL aborts its transaction in a deadlock and it is retried', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs row locks to make a deadlock; SQLite transactions take turns');
    const acct = await createAccount(t.app);
    const files = [];
    for (let i = 0; i < 3; i++) files.push(await uploadOk(t, acct.auth, 'y'.repeat(10 + i), { name: `d${i}.txt` }));
    for (const f of files) await t.http().delete(`/v1/files/${f.id}`).set(acct.auth).expect(200);
    // Another transaction holds the account row; the emptying deletes the files, then waits for the row.
    const other = db().createQueryRunner();
    await other.startTransaction();
    try {
      await other.query('SELECT id FROM accounts WHERE id = $1 FOR UPDATE', [acct.accountId]);
      const emptied = t.http().delete('/v1/trash').set(acct.auth).then((res) => res);
      await eventually(async () => (await db().query("SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'"))[0].n > 0, 10_000, 'the emptying to wait for the account row');
      // Now the other transaction wants a file the emptying has deleted: a deadlock, and PostgreSQL aborts the emptying (it waited first).
      await other.query('SELECT id FROM files WHERE id = $1 FOR UPDATE', [files[0].id]).catch(() => undefined);
      await other.rollbackTransaction();
      const res = await emptied;
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ deleted_count: 3, freed_bytes: 33 });
    } finally {
      if (other.isTransactionActive) await other.rollbackTransaction();
      await other.release();
    }
    expect((await t.http().get('/v1/trash').set(acct.auth)).body.data).toEqual([]);
    expect((await account(acct.accountId)).storageUsed).toBe(0);
  });

  it('empties the trash while a restore of the same file runs: one of them wins, and the counts say which', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to interleave the two; SQLite transactions take turns');
    for (const restoreFirst of [false, true]) {
      const acct = await createAccount(t.app);
      const file = await uploadOk(t, acct.auth, 'contested', { name: 'contested.txt' });
      await t.http().delete(`/v1/files/${file.id}`).set(acct.auth).expect(200);
      const empty = () => t.http().delete('/v1/trash').set(acct.auth).then((res) => res);
      const restore = () => t.http().post(`/v1/files/${file.id}/restore`).set(acct.auth).then((res) => res);
      const [first, second] = await queueBehindRowLock(t.app, 'files', file.id, restoreFirst ? [restore, empty] : [empty, restore]);
      const [emptied, restored] = restoreFirst ? [second, first] : [first, second];
      // Whichever wrote the row first wins (usually the one queued first); never both, never neither.
      const restoreWon = restored.status === 200;
      expect([emptied.status, restored.status]).toEqual([200, restoreWon ? 200 : 404]);
      expect(emptied.body.data).toEqual(restoreWon ? { deleted_count: 0, freed_bytes: 0 } : { deleted_count: 1, freed_bytes: 9 });
      expect((await t.http().get(`/v1/files/${file.id}`).set(acct.auth)).status).toBe(restoreWon ? 200 : 404);
      expect((await account(acct.accountId)).storageUsed).toBe(restoreWon ? 9 : 0);
      expect((await t.http().get('/v1/trash').set(acct.auth)).body.data).toEqual([]);
    }
  });

  it('purges a trash larger than one batch across accounts: each account freed by exactly its own files', async () => {
    const accounts = [await createAccount(t.app), await createAccount(t.app)];
    const expired: { accountId: string; ids: string[]; kept: { id: string; size: number } }[] = [];
    for (const [n, acct] of accounts.entries()) {
      const files = [];
      // 130 + 150 files: more than one purge batch, with batches holding files of both accounts.
      for (let i = 0; i < 130 + n * 20; i++) files.push(await uploadOk(t, acct.auth, 'y'.repeat(1 + (i % 7)), { name: `big${i}.txt` }));
      const kept = await uploadOk(t, acct.auth, 'kept!', { name: 'kept.txt' });
      const res = await t.http().post('/v1/files/bulk-delete').set(acct.auth).send({ file_ids: files.map((f) => f.id) });
      expect(res.body.data.deleted_count).toBe(files.length);
      expired.push({ accountId: acct.accountId, ids: files.map((f) => f.id), kept });
    }
    const result = await t.app.get(CommandBus).execute(new PurgeTrashCommand(new Date(Date.now() + 31 * DAY)));
    expect(result.purged).toBeGreaterThanOrEqual(280);
    for (const { accountId, ids, kept } of expired) {
      expect((await db().getRepository(FileEntity).findBy({ accountId })).map((f) => f.id)).toEqual([kept.id]);
      expect((await account(accountId)).storageUsed).toBe(kept.size);
      expect(listBlobs(t, `files/${accountId}/`)).toEqual([expect.stringMatching(new RegExp(`^${blobKeys.filePrefix(accountId, kept.id)}`))]);
      const purgedEvents = (await deletedEvents(accountId)).filter((e) => e.permanent);
      expect(purgedEvents.map((e) => e.id).sort()).toEqual([...ids].sort());
      expect(purgedEvents.every((e) => e.deleted_by === 'system')).toBe(true);
    }
  });

  it('removes deleted folders once their window has passed and nothing that stays is left in them', async () => {
    const acct = await createAccount(t.app);
    const folder = async (name: string, parent_id?: string) => (await t.http().post('/v1/folders').set(acct.auth).send({ name, parent_id }).expect(201)).body.data;
    const top = await folder('Old projects');
    const middle = await folder('2025', top.id);
    const leaf = await folder('Q4', middle.id);
    const inside = await uploadOk(t, acct.auth, 'in the leaf', { name: 'report.txt', folderId: leaf.id });
    const rescued = await uploadOk(t, acct.auth, 'restored later', { name: 'keep.txt', folderId: middle.id });
    await t.http().delete(`/v1/folders/${top.id}`).set(acct.auth).expect(200);
    // Restored after the folder went: back in the root, so it holds on to nothing.
    expect((await t.http().post(`/v1/files/${rescued.id}/restore`).set(acct.auth).expect(200)).body.data.folder_id).toBeNull();
    const recent = await folder('Deleted recently');
    await t.http().delete(`/v1/folders/${recent.id}`).set(acct.auth).expect(200);
    const folders = db().getRepository(FolderEntity);
    const later = Date.now() + 31 * DAY;
    // Only the old tree is past its window: the recent folder is deleted "now" and the purge runs 31 days on.
    await folders.update({ id: recent.id }, { deletedAt: new Date(later - DAY) });

    await t.app.get(CommandBus).execute(new PurgeTrashCommand(new Date(later)));
    expect(await db().getRepository(FileEntity).findOneBy({ id: inside.id })).toBeNull();
    expect((await folders.findBy({ accountId: acct.accountId })).map((f) => f.id)).toEqual([recent.id]);
    expect((await t.http().get(`/v1/files/${rescued.id}`).set(acct.auth)).status).toBe(200);
  });

  it('removes a deleted folder tree 3,000 levels deep in a few statements, keeping only the folders above a file still in the trash', async () => {
    // Leaves first, one pass a level, each pass reading every deleted folder: a deep tree took 5 minutes of the purge
    // for 5,000 levels of 20,000 (SQLite), a write transaction after another, every ten minutes, until gone.
    const acct = await createAccount(t.app);
    const folder = async (name: string, parent_id?: string) => (await t.http().post('/v1/folders').set(acct.auth).send({ name, parent_id }).expect(201)).body.data;
    const top = await folder('Archive');
    const kept = await folder('Kept', top.id);
    const late = await uploadOk(t, acct.auth, 'still recoverable', { name: 'late.txt', folderId: kept.id });
    await insertFolderChain(t.app, acct, top.id, 3_000);
    await t.http().delete(`/v1/folders/${top.id}`).set(acct.auth).expect(200);
    const later = Date.now() + 31 * DAY;
    // A file whose window outlasts its folders' (as if deleted again after a restore): its folder and those above stay.
    await db().getRepository(FileEntity).update({ id: late.id }, { recoverableUntil: new Date(later + DAY) });
    const folders = db().getRepository(FolderEntity);

    const before = databaseCounts.statements;
    await t.app.get(CommandBus).execute(new PurgeTrashCommand(new Date(later)));
    expect(databaseCounts.statements - before).toBeLessThan(1_000);
    expect((await folders.findBy({ accountId: acct.accountId })).map((f) => f.id).sort()).toEqual([top.id, kept.id].sort());

    await t.app.get(CommandBus).execute(new PurgeTrashCommand(new Date(later + 2 * DAY)));
    expect(await db().getRepository(FileEntity).findOneBy({ id: late.id })).toBeNull();
    expect(await folders.countBy({ accountId: acct.accountId })).toBe(0);
  }, 120_000);

  it('refuses to restore a file whose recovery window has passed', async () => {
    const file = await uploadOk(t, owner.auth, 'old', { name: 'expired.txt' });
    await t.http().delete(`/v1/files/${file.id}`).set(owner.auth);
    await db().getRepository(FileEntity).update({ id: file.id }, { recoverableUntil: new Date(Date.now() - 1000) });
    expect((await t.http().post(`/v1/files/${file.id}/restore`).set(owner.auth)).status).toBe(404);
  });

  it('ends the recovery window on the dot: a file past it leaves the listing, its totals and search before the purge runs', async () => {
    const acct = await createAccount(t.app);
    const expired = await uploadOk(t, acct.auth, 'old', { name: 'lapsed-notes.txt' });
    const kept = await uploadOk(t, acct.auth, 'new', { name: 'kept-notes.txt' });
    for (const f of [expired, kept]) await t.http().delete(`/v1/files/${f.id}`).set(acct.auth).expect(200);
    await db().getRepository(FileEntity).update({ id: expired.id }, { recoverableUntil: new Date(Date.now() - 1000) });

    const listed = await t.http().get('/v1/trash').set(acct.auth);
    expect(listed.body.data.map((f: { id: string }) => f.id)).toEqual([kept.id]);
    expect(listed.body.pagination).toMatchObject({ total_items: 1, total_pages: 1 });
    // Both ways a search is answered: the trigram index (three characters or more) and the listing's own range.
    for (const search of ['notes', 'la']) {
      const found = await t.http().get(`/v1/trash?search=${search}`).set(acct.auth);
      expect(found.body.data.map((f: { id: string }) => f.id)).toEqual(search === 'la' ? [] : [kept.id]);
      expect(found.body.pagination.total_items).toBe(search === 'la' ? 0 : 1);
    }
    const restore = await t.http().post(`/v1/files/${expired.id}/restore`).set(acct.auth);
    expect(restore.status).toBe(404);
    expect(restore.body.error.code).toBe('not_found');
    // Still there for the purge to take (and free its storage) when it runs.
    expect((await db().getRepository(FileEntity).findOneByOrFail({ id: expired.id })).state).toBe('trashed');
  });
});

describe('the purge', () => {
  it('runs from the CLI: `trash purge` prints {purged, freed_bytes} and leaves unexpired files alone', async () => {
    // The server's own schedule (every ten minutes by default) must not purge the file first: once a year here.
    const t = await startTestApp({ TRASH_RETENTION_DAYS: '0.00001', TRASH_PURGE_CRON: '0 0 1 1 *' });
    try {
      const acct = await createAccount(t.app);
      const doomed = await uploadOk(t, acct.auth, '12345', { name: 'doomed.txt' });
      const alive = await uploadOk(t, acct.auth, 'alive', { name: 'alive.txt' });
      const kept = await uploadOk(t, acct.auth, 'kept in the trash', { name: 'kept.txt' });
      await t.http().delete(`/v1/files/${doomed.id}`).set(acct.auth);
      await t.http().delete(`/v1/files/${kept.id}`).set(acct.auth);
      // Trashed too, but its recovery window has not passed: the purge must leave it.
      await t.app.get(DataSource).getRepository(FileEntity).update({ id: kept.id }, { recoverableUntil: new Date(Date.now() + 86_400_000) });
      await sleep(1200);
      const result = await runNode('cli.js', ['trash', 'purge'], t.environment.env);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ purged: 1, freed_bytes: 5 });
      expect(listBlobs(t, blobKeys.filePrefix(acct.accountId, doomed.id))).toEqual([]);
      expect((await t.http().get(`/v1/files/${alive.id}`).set(acct.auth)).status).toBe(200);
      const trash = await t.http().get('/v1/trash').set(acct.auth);
      expect(trash.body.data.map((item: { id: string }) => item.id)).toEqual([kept.id]);
      expect(listBlobs(t, blobKeys.filePrefix(acct.accountId, kept.id))).toHaveLength(1);
      const again = await runNode('cli.js', ['trash', 'purge'], t.environment.env);
      expect(JSON.parse(again.stdout)).toEqual({ purged: 0, freed_bytes: 0 });
    } finally {
      await t.close();
    }
  });

  it('runs on TRASH_PURGE_CRON in the server', async () => {
    const t = await startTestApp({ TRASH_RETENTION_DAYS: '0.00001', TRASH_PURGE_CRON: '* * * * * *' });
    try {
      const acct = await createAccount(t.app);
      const file = await uploadOk(t, acct.auth, 'tick', { name: 'tick.txt' });
      await t.http().delete(`/v1/files/${file.id}`).set(acct.auth);
      await eventually(async () => (await t.app.get(DataSource).getRepository(FileEntity).findOneBy({ id: file.id })) === null, 15_000, 'the scheduled purge');
      expect((await t.app.get(DataSource).getRepository(AccountEntity).findOneByOrFail({ id: acct.accountId })).storageUsed).toBe(0);
    } finally {
      await t.close();
    }
  });
});

describe('the purge racing restores (blobs on S3, behind a proxy that can stall them)', () => {
  let s3: TestS3;
  let proxy: HoldableProxy;
  let t: TestApp;

  beforeAll(async () => {
    s3 = await startS3();
    proxy = await startHoldableProxy(s3.port);
    t = await startTestApp(s3.env(proxy.port));
  });
  afterAll(async () => {
    proxy?.release();
    await t?.close();
    await proxy?.close();
    await s3?.close();
  });

  it('never purges a file restored while the purge runs, and two purges take every other expired one exactly once', async () => {
    const db = t.app.get(DataSource);
    const later = new Date(Date.now() + 31 * DAY);
    // Another account's expired files come first in the purge's order: two batches, so that the purge,
    // stalled by the blob deletion of its first batch, stops after the second, before the race files.
    const filler = await createAccount(t.app);
    const fillerIds: string[] = [];
    while (fillerIds.length < 2 * PURGE_BATCH) fillerIds.push(...(await Promise.all(Array.from({ length: 25 }, async () => (await seedFile(t.app, filler, { content: 'f' })).id))));
    await t.http().post('/v1/files/bulk-delete').set(filler.auth).send({ file_ids: fillerIds }).expect(200);
    const acct = await createAccount(t.app);
    const files = [];
    for (let i = 0; i < 24; i++) files.push(await uploadOk(t, acct.auth, `c${i}`, { name: `race${i}.txt` }));
    await t.http().post('/v1/files/bulk-delete').set(acct.auth).send({ file_ids: files.map((f) => f.id) }).expect(200);
    const targets = files.filter((_, i) => i % 2 === 0);
    const [early, late] = [targets.slice(0, 6), targets.slice(6)];

    proxy.hold();
    let purging = true;
    const purge = () => t.app.get(CommandBus).execute(new PurgeTrashCommand(later));
    const firstPurge = purge().finally(() => (purging = false));
    await proxy.somethingHeld();
    // The purge is under way (a batch committed, its blobs on their way out): these restores race it, and win.
    for (const f of early) {
      expect((await t.http().post(`/v1/files/${f.id}/restore`).set(acct.auth)).status).toBe(200);
      expect(purging).toBe(true);
    }
    // Released, it goes on into the race files, with a second purge competing for them.
    proxy.release();
    const [first, second] = await Promise.all([firstPurge, purge()]);
    // Too late for these: the purge took them first.
    for (const f of late) expect((await t.http().post(`/v1/files/${f.id}/restore`).set(acct.auth)).status).toBe(404);

    // Every expired file was purged by exactly one of the two purges, except the restored ones.
    expect(first.purged + second.purged).toBe(fillerIds.length + files.length - early.length);
    const remaining = await db.getRepository(FileEntity).findBy({ accountId: acct.accountId });
    expect(remaining.map((f) => f.id).sort()).toEqual(early.map((f) => f.id).sort());
    for (const f of early) expect((await t.http().get(`/v1/files/${f.id}`).set(acct.auth)).status).toBe(200);
    const blobs = [];
    for await (const blob of t.app.get(BlobStorage).list(`files/${acct.accountId}/`)) blobs.push(blob.key);
    expect(blobs.sort()).toEqual(remaining.map((f) => f.blobKey).sort());
    expect((await db.getRepository(AccountEntity).findOneByOrFail({ id: acct.accountId })).storageUsed).toBe(early.reduce((sum, f) => sum + f.size, 0));
    const events = await db.getRepository(OutboxEventEntity).findBy({ accountId: acct.accountId, event: 'file.deleted' });
    const purgedEvents = events.map((e) => JSON.parse(e.payload).file).filter((e) => e.permanent);
    expect(purgedEvents.map((e) => e.id).sort()).toEqual(files.filter((f) => !early.includes(f)).map((f) => f.id).sort());
    expect(purgedEvents.every((e) => e.deleted_by === 'system')).toBe(true);
  }, 180_000);
});
