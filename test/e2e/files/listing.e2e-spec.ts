import { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/common/ids.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { ShareEntity } from '../../../src/modules/shares/share.entity.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { TEST_DB, type TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';
import { scanSettled } from '../../support/files.js';
import { queueBehindRowLock } from '../../support/row-lock.js';
import { uploadOk } from '../../support/uploads.js';
import { sleep } from '../../support/time.js';

const SORTS = ['created_asc', 'created_desc', 'modified_asc', 'modified_desc', 'name_asc', 'name_desc', 'size_asc', 'size_desc'];

describe('listing, reading and changing files', () => {
  let t: TestApp;
  let owner: TestAccount;
  let folderId: string;
  const inFolder: any[] = [];

  useTestApp((started) => ({ t, owner } = started));
  beforeAll(async () => {
    folderId = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Sorted' })).body.data.id;
    // 23 files with repeated sizes and names differing only in case, so ties must be broken by id.
    const names = ['b.txt', 'A.txt', 'c.txt', 'a2.txt', 'B2.txt'];
    for (let i = 0; i < 23; i++) {
      const name = `${names[i % names.length].replace('.', `-${Math.floor(i / 5)}.`)}`;
      inFolder.push(await uploadOk(t, owner.auth, 'x'.repeat(i % 4), { name, folderId }));
    }
    // Two share the same created_at millisecond sometimes; force exact ties on a few.
    const repo = t.app.get(DataSource).getRepository(FileEntity);
    await repo.update({ id: inFolder[1].id }, { createdAt: new Date(inFolder[0].created_at), modifiedAt: new Date(inFolder[0].modified_at) });
    await repo.update({ id: inFolder[2].id }, { createdAt: new Date(inFolder[0].created_at), modifiedAt: new Date(inFolder[0].modified_at) });
  });

  it.each(SORTS)('pages through %s without repeats or skips, in order, ties broken by id', async (sort) => {
    const seen: any[] = [];
    for (let page = 1; page <= 5; page++) {
      const res = await t.http().get(`/v1/files?folder_id=${folderId}&sort=${sort}&per_page=5&page=${page}`).set(owner.auth);
      expect(res.status).toBe(200);
      expect(res.body.pagination).toEqual({ page, per_page: 5, total_items: 23, total_pages: 5, next_cursor: page < 5 ? expect.any(String) : null });
      seen.push(...res.body.data);
    }
    expect(seen).toHaveLength(23);
    expect(new Set(seen.map((f) => f.id)).size).toBe(23);
    const [field, direction] = sort.split('_');
    const key = (f: any) => (field === 'created' ? f.created_at : field === 'modified' ? f.modified_at : field === 'name' ? f.name.toLowerCase() : f.size);
    for (let i = 1; i < seen.length; i++) {
      const [a, b] = direction === 'asc' ? [seen[i - 1], seen[i]] : [seen[i], seen[i - 1]];
      const ka = key(a);
      const kb = key(b);
      expect(ka < kb || (ka === kb && a.id < b.id), `${sort} at ${i}`).toBe(true);
    }
  });

  it('defaults to the root, page 1, 50 per page, newest first', async () => {
    // Named so that the name order is the opposite of the newest-first order.
    const older = await uploadOk(t, owner.auth, 'root', { name: 'b-older.txt' });
    await sleep(5); // a later created_at, not the same millisecond
    const rootFile = await uploadOk(t, owner.auth, 'root', { name: 'a-newer.txt' });
    const res = await t.http().get('/v1/files').set(owner.auth);
    expect(res.body.pagination).toEqual({ page: 1, per_page: 50, total_items: 2, total_pages: 1, next_cursor: null });
    expect(res.body.data.map((f: any) => f.id)).toEqual([rootFile.id, older.id]);
    expect(res.body.data[0].is_shared).toBe(false);
  });

  it('answers a page past the end with no data and the right pagination', async () => {
    const res = await t.http().get(`/v1/files?folder_id=${folderId}&per_page=10&page=9`).set(owner.auth);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    expect(res.body.pagination).toEqual({ page: 9, per_page: 10, total_items: 23, total_pages: 3, next_cursor: null });
  });

  it('searches names case-insensitively as a substring, literally', async () => {
    await uploadOk(t, owner.auth, 'x', { name: 'Quarterly REPORT 100%_final.pdf' });
    await uploadOk(t, owner.auth, 'x', { name: 'report-draft.txt' });
    await uploadOk(t, owner.auth, 'x', { name: 'other.txt' });
    const names = async (q: string) => (await t.http().get(`/v1/files?search=${encodeURIComponent(q)}&sort=name_asc`).set(owner.auth)).body.data.map((f: any) => f.name);
    expect(await names('report')).toEqual(['Quarterly REPORT 100%_final.pdf', 'report-draft.txt']);
    expect(await names('100%_')).toEqual(['Quarterly REPORT 100%_final.pdf']);
    expect(await names('%')).toEqual(['Quarterly REPORT 100%_final.pdf']);
    expect(await names('nothing')).toEqual([]);
  });

  it('filters by category', async () => {
    await uploadOk(t, owner.auth, Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), { name: 'pic.png' });
    const res = await t.http().get('/v1/files?type=image').set(owner.auth);
    expect(res.body.data.map((f: any) => [f.name, f.category])).toEqual([['pic.png', 'image']]);
  });

  it.each([
    ['page=0', 'page'],
    ['per_page=101', 'per_page'],
    ['per_page=0', 'per_page'],
    ['sort=newest', 'sort'],
    ['type=spreadsheet', 'type'],
    ['page=1&page=2', 'page'],
    ['sort=name_asc&sort=name_desc', 'sort'],
    ['colour=red', 'colour'],
    ['folder_id=', 'folder_id'],
    ['folder_id=..%2Ffld_x', 'folder_id'],
  ])('refuses %s with invalid_request', async (query, field) => {
    const res = await t.http().get(`/v1/files?${query}`).set(owner.auth);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details.fields.map((f: any) => f.field)).toContain(field);
  });

  it.each([
    ['page=-1', { field: 'page', message: 'must not be less than 1' }],
    ['per_page=-5', { field: 'per_page', message: 'must not be less than 1' }],
    ['page=1.5', { field: 'page', message: 'must be an integer number' }],
    ['per_page=1e2', { field: 'per_page', message: 'must be an integer number' }],
  ])('says what is wrong with %s', async (query, problem) => {
    const res = await t.http().get(`/v1/files?${query}`).set(owner.auth);
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields).toEqual([problem]);
  });

  it('answers 404 for an unknown, trashed or foreign folder', async () => {
    expect((await t.http().get('/v1/files?folder_id=fld_nope').set(owner.auth)).status).toBe(404);
    const trashed = await t.http().post('/v1/folders').set(owner.auth).send({ name: 'to be trashed' });
    expect((await t.http().get(`/v1/files?folder_id=${trashed.body.data.id}`).set(owner.auth)).status).toBe(200);
    expect((await t.http().delete(`/v1/folders/${trashed.body.data.id}`).set(owner.auth)).status).toBe(200);
    expect((await t.http().get(`/v1/files?folder_id=${trashed.body.data.id}`).set(owner.auth)).status).toBe(404);
    const other = await createAccount(t.app);
    expect((await t.http().get(`/v1/files?folder_id=${folderId}`).set(other.auth)).status).toBe(404);
  });

  it('marks files with a live share link as shared, and only those', async () => {
    const files = await Promise.all(['s1.txt', 's2.txt', 's3.txt', 's4.txt', 's5.txt'].map((name) => uploadOk(t, owner.auth, 'x', { name })));
    const now = Date.now();
    const share = (fileId: string, extra: Partial<ShareEntity>) =>
      t.app.get(DataSource).getRepository(ShareEntity).insert({
        id: newId('shr'),
        accountId: owner.accountId,
        fileId,
        token: newId('shr'),
        passwordHash: null,
        expiresAt: null,
        createdBy: owner.userId,
        createdAt: new Date(now),
        revokedAt: null,
        invalidatedAt: null,
        accessCount: 0,
        lastAccessedAt: null,
        ...extra,
      });
    await share(files[0].id, {});
    await share(files[1].id, { expiresAt: new Date(now + 3600_000) });
    await share(files[2].id, { expiresAt: new Date(now - 1000) });
    await share(files[3].id, { revokedAt: new Date(now) });
    await share(files[4].id, { invalidatedAt: new Date(now) });
    const res = await t.http().get('/v1/files?search=s&per_page=100').set(owner.auth);
    const shared = Object.fromEntries(res.body.data.filter((f: any) => /^s\d\.txt$/.test(f.name)).map((f: any) => [f.name, f.is_shared]));
    expect(shared).toEqual({ 's1.txt': true, 's2.txt': true, 's3.txt': false, 's4.txt': false, 's5.txt': false });
    expect((await t.http().get(`/v1/files/${files[0].id}`).set(owner.auth)).body.data.is_shared).toBe(true);
  });

  it('leaves trashed and quarantined files out of listings and GET', async () => {
    const trashed = await uploadOk(t, owner.auth, 'x', { name: 'gone.txt' });
    const infected = await uploadOk(t, owner.auth, 'x', { name: 'virus.exe' });
    await t.http().delete(`/v1/files/${trashed.id}`).set(owner.auth);
    // Let the background scan of the upload settle first, so its verdict cannot overwrite ours.
    await scanSettled(t.app, infected.id);
    const files = t.app.get(DataSource).getRepository(FileEntity);
    await files.update({ id: infected.id }, { scanStatus: 'infected' });
    const ids = (await t.http().get('/v1/files?per_page=100').set(owner.auth)).body.data.map((f: any) => f.id);
    expect(ids).not.toContain(trashed.id);
    expect(ids).not.toContain(infected.id);
    expect((await t.http().get(`/v1/files/${trashed.id}`).set(owner.auth)).status).toBe(404);
    expect((await t.http().get(`/v1/files/${infected.id}`).set(owner.auth)).status).toBe(404);
  });

  it('gets one file with is_shared and md5_hash; another account gets 404', async () => {
    const file = await uploadOk(t, owner.auth, 'abc', { name: 'one.txt' });
    const res = await t.http().get(`/v1/files/${file.id}`).set(owner.auth);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: file.id, name: 'one.txt', size: 3, md5_hash: '900150983cd24fb0d6963f7d28e17f72', is_shared: false });
    const other = await createAccount(t.app);
    const foreign = await t.http().get(`/v1/files/${file.id}`).set(other.auth);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    expect((await t.http().patch(`/v1/files/${file.id}`).set(other.auth).send({ name: 'mine.txt' })).status).toBe(404);
    expect((await t.http().delete(`/v1/files/${file.id}`).set(other.auth)).status).toBe(404);
  });

  it('renames and moves a file, numbering a taken name and updating modified_at', async () => {
    const a = await uploadOk(t, owner.auth, 'a', { name: 'move-me.txt' });
    await uploadOk(t, owner.auth, 'b', { name: 'taken.txt', folderId });
    await sleep(5);
    const moved = await t.http().patch(`/v1/files/${a.id}`).set(owner.auth).send({ name: 'TAKEN.txt', folder_id: folderId });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({ id: a.id, name: 'TAKEN (1).txt', folder_id: folderId, created_at: a.created_at });
    expect(moved.body.data.modified_at > a.modified_at).toBe(true);
    const back = await t.http().patch(`/v1/files/${a.id}`).set(owner.auth).send({ folder_id: null });
    expect(back.body.data).toMatchObject({ name: 'TAKEN (1).txt', folder_id: null });
    const renamedInPlace = await t.http().patch(`/v1/files/${a.id}`).set(owner.auth).send({ name: 'taken (1).TXT' });
    expect(renamedInPlace.body.data.name).toBe('taken (1).TXT');
    for (const name of ['../x', 'a/b', '.', '..', '', 'x'.repeat(256)]) {
      expect((await t.http().patch(`/v1/files/${a.id}`).set(owner.auth).send({ name })).status, name).toBe(400);
    }
    expect((await t.http().patch(`/v1/files/${a.id}`).set(owner.auth).send({ folder_id: 'fld_nope' })).status).toBe(404);
    expect((await t.http().patch(`/v1/files/${a.id}`).set(owner.auth).send({ size: 5 })).status).toBe(400);
  });

  it('leaves a file as it was on a PATCH that changes nothing: an empty body, its own name, its own folder', async () => {
    const file = await uploadOk(t, owner.auth, 'same', { name: 'Unchanged.txt', folderId });
    await sleep(5);
    for (const body of [{}, { name: 'Unchanged.txt' }, { folder_id: folderId }, { name: 'Unchanged.txt', folder_id: folderId }]) {
      const res = await t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send(body);
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(res.body.data, JSON.stringify(body)).toMatchObject({ name: 'Unchanged.txt', folder_id: folderId, modified_at: file.modified_at });
    }
    expect((await t.http().get(`/v1/files/${file.id}`).set(owner.auth)).body.data.modified_at).toBe(file.modified_at);
    // Still a change: another case, or back to the root.
    const recased = await t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ name: 'unchanged.txt' });
    expect(recased.body.data.modified_at > file.modified_at).toBe(true);
    expect((await t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ name: 'unchanged.txt', folder_id: 'fld_nope' })).status).toBe(404);
  });

  it('answers 404 to a rename that read the file before a deletion committed, and leaves the trashed file as deleted', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to interleave the two; SQLite transactions take turns');
    const file = await uploadOk(t, owner.auth, 'r', { name: 'racing.txt' });
    await scanSettled(t.app, file.id); // so the scan's own update of the row does not queue behind the lock
    const [deleted, renamed] = await queueBehindRowLock(t.app, 'files', file.id, [
      () => t.http().delete(`/v1/files/${file.id}`).set(owner.auth).then((res) => res),
      () => t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ name: 'renamed too late.txt', folder_id: folderId }).then((res) => res),
    ]);
    expect(deleted.status).toBe(200);
    expect(renamed.status).toBe(404);
    expect(renamed.body.error.code).toBe('not_found');
    const trashed = (await t.http().get('/v1/trash?per_page=100').set(owner.auth)).body.data.find((f: { id: string }) => f.id === file.id);
    expect(trashed).toMatchObject({ name: 'racing.txt', folder_id: null });
  });

  it('never undoes a move with a rename that read the file before the move committed, nor the other way round', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to interleave the two; SQLite transactions take turns');
    const target = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Moved into' })).body.data;
    for (const renameFirst of [false, true]) {
      const file = await uploadOk(t, owner.auth, 'b', { name: `both at once ${renameFirst}.txt` });
      await scanSettled(t.app, file.id); // so the scan's own update of the row does not queue behind the lock
      const move = () => t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ folder_id: target.id }).then((res) => res);
      const rename = () => t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ name: `renamed ${renameFirst}.txt` }).then((res) => res);
      const answers = await queueBehindRowLock(t.app, 'files', file.id, renameFirst ? [rename, move] : [move, rename]);
      expect(answers.map((res) => res.status)).toEqual([200, 200]);
      // Each wrote the file as it found it after the other: the rename kept the move, the move kept the rename.
      expect((await t.http().get(`/v1/files/${file.id}`).set(owner.auth)).body.data).toMatchObject({ name: `renamed ${renameFirst}.txt`, folder_id: target.id });
    }
  });

  it('never trashes a file with its folder when a move out of that folder came first', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to interleave the two; SQLite transactions take turns');
    const leaving = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Left in time' })).body.data;
    const file = await uploadOk(t, owner.auth, 'l', { name: 'leaving.txt', folderId: leaving.id });
    await scanSettled(t.app, file.id); // so the scan's own update of the row does not queue behind the lock
    const [moved, deleted] = await queueBehindRowLock(t.app, 'files', file.id, [
      () => t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ folder_id: null }).then((res) => res),
      () => t.http().delete(`/v1/folders/${leaving.id}`).set(owner.auth).then((res) => res),
    ]);
    expect(moved.status).toBe(200);
    expect(moved.body.data.folder_id).toBeNull();
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.files_deleted).toBe(0);
    expect((await t.http().get(`/v1/files/${file.id}`).set(owner.auth)).body.data).toMatchObject({ id: file.id, folder_id: null });
  });

  it('checks scopes: read for listing and GET, write for PATCH', async () => {
    const writer = await createKey(t.app, owner, ['write']);
    const reader = await createKey(t.app, owner, ['read']);
    expect((await t.http().get('/v1/files').set(writer.auth)).status).toBe(403);
    expect((await t.http().get('/v1/files').set(reader.auth)).status).toBe(200);
    expect((await t.http().patch(`/v1/files/${inFolder[0].id}`).set(reader.auth).send({ name: 'z.txt' })).status).toBe(403);
    expect((await t.http().get('/v1/files')).status).toBe(401);
  });
});
