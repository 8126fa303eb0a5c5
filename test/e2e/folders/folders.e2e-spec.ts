import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { newId } from '../../../src/common/ids.js';
import { insertRows } from '../../../src/infra/database/insert-rows.js';
import { databaseCounts } from '../../../src/infra/database/statement-counter.js';
import { OutboxEventEntity } from '../../../src/infra/outbox/outbox-event.entity.js';
import { FolderRings1764380000000 } from '../../../src/infra/database/migrations/1764380000000-folder-rings.js';
import { FolderEntity } from '../../../src/modules/folders/folder.entity.js';
import { ShareEntity } from '../../../src/modules/shares/share.entity.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { insertFolderChain } from '../../support/folders.js';
import { TEST_DB, type TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';
import { queueBehindRowLock } from '../../support/row-lock.js';
import { sleep } from '../../support/time.js';
import { upload, uploadOk } from '../../support/uploads.js';

describe('folders', () => {
  let t: TestApp;
  let owner: TestAccount;
  const create = (body: Record<string, unknown>, auth = owner.auth) => t.http().post('/v1/folders').set(auth).send(body);

  useTestApp((started) => ({ t, owner } = started));

  it('creates a folder (201) and records folder.created', async () => {
    const res = await create({ name: 'Projects' });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.stringMatching(/^fld_/),
      name: 'Projects',
      parent_id: null,
      created_by: owner.userId,
      created_at: expect.any(String),
      modified_at: res.body.data.created_at,
    });
    const child = (await create({ name: 'Alpha', parent_id: res.body.data.id })).body.data;
    expect(child.parent_id).toBe(res.body.data.id);
    const events = await t.app.get(DataSource).getRepository(OutboxEventEntity).findBy({ accountId: owner.accountId, event: 'folder.created' });
    expect(events.map((e) => JSON.parse(e.payload))).toEqual(
      expect.arrayContaining([
        { folder: { id: res.body.data.id, name: 'Projects', parent_id: null, created_by: owner.userId } },
        { folder: { id: child.id, name: 'Alpha', parent_id: res.body.data.id, created_by: owner.userId } },
      ]),
    );
  });

  it('numbers taken sibling names case-insensitively, and refuses illegal names', async () => {
    const names = [];
    for (const name of ['Photos', 'photos', 'PHOTOS']) names.push((await create({ name })).body.data.name);
    expect(names).toEqual(['Photos', 'photos (1)', 'PHOTOS (2)']);
    // A folder has no extension: its number goes at the end, not before the last dot as a file's does.
    const dotted = [];
    for (let i = 0; i < 3; i++) dotted.push((await create({ name: 'Project.v2' })).body.data.name);
    expect(dotted).toEqual(['Project.v2', 'Project.v2 (1)', 'Project.v2 (2)']);
    for (const name of ['', '.', '..', 'a/b', 'a\\b', 'x'.repeat(256), 'nul\0']) {
      const res = await create({ name });
      expect(res.status, JSON.stringify(name)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    expect((await create({})).status).toBe(400);
    expect((await create({ name: 'x', parent_id: 'fld_nope' })).status).toBe(404);
  });

  it('gives every copy of a 255-character folder name its own numbered name, shortened to fit, on create and rename', async () => {
    const parent = (await create({ name: 'Long names' })).body.data;
    const long = 'F'.repeat(255);
    const numbered = (name: string, n: number) => `${name.slice(0, 255 - ` (${n})`.length)} (${n})`;
    const names: string[] = [];
    for (let copy = 0; copy < 11; copy++) {
      const res = await create({ name: long, parent_id: parent.id });
      expect(res.status, `copy ${copy}: ${JSON.stringify(res.body.error)}`).toBe(201);
      names.push(res.body.data.name);
    }
    expect(names).toEqual([long, ...Array.from({ length: 10 }, (_, i) => numbered(long, i + 1))]);
    const renamed = await t.http().patch(`/v1/folders/${(await create({ name: 'other', parent_id: parent.id })).body.data.id}`).set(owner.auth).send({ name: long.toLowerCase() });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.name).toBe(numbered(long.toLowerCase(), 11));
    const listed = await t.http().get('/v1/folders').query({ parent_id: parent.id, per_page: 100 }).set(owner.auth);
    expect(listed.body.pagination.total_items).toBe(12);
  });

  it('numbers a taken folder name whose "extension" leaves no room, shortening the whole name to 255 characters', async () => {
    const parent = (await create({ name: 'No room' })).body.data;
    const name = `a.${'x'.repeat(253)}`;
    const names: string[] = [];
    for (let copy = 0; copy < 3; copy++) {
      const res = await create({ name, parent_id: parent.id });
      expect(res.status, `copy ${copy}: ${JSON.stringify(res.body.error)}`).toBe(201);
      names.push(res.body.data.name);
    }
    expect(names).toEqual([name, `${name.slice(0, 251)} (1)`, `${name.slice(0, 251)} (2)`]);
    const listed = await t.http().get('/v1/folders').query({ parent_id: parent.id, sort: 'name_asc' }).set(owner.auth);
    expect(listed.body.data.map((f: { name: string }) => f.name)).toEqual([`${name.slice(0, 251)} (1)`, `${name.slice(0, 251)} (2)`, name]);
  });

  it('refuses a folder name with an unpaired surrogate, on create and rename, with 400 naming the field', async () => {
    const folder = (await create({ name: 'Surrogates' })).body.data;
    for (const name of ['\ud800', 'Photos \udc00', '\udfff\ud800']) {
      const created = await create({ name });
      expect(created.status, JSON.stringify(name)).toBe(400);
      expect(created.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'name', message: expect.stringMatching(/Unicode/) }] } });
      const renamed = await t.http().patch(`/v1/folders/${folder.id}`).set(owner.auth).send({ name });
      expect(renamed.status, JSON.stringify(name)).toBe(400);
      expect(renamed.body.error.details.fields).toEqual([{ field: 'name', message: expect.stringMatching(/Unicode/) }]);
    }
    expect((await t.http().get('/v1/folders').query({ search: 'surrogates' }).set(owner.auth)).body.data.map((f: { name: string }) => f.name)).toEqual(['Surrogates']);
  });

  it('lists a parent\'s folders with pagination, the root by default', async () => {
    const parent = (await create({ name: 'Listing' })).body.data;
    for (const name of ['c', 'A', 'b', 'D', 'e']) await create({ name, parent_id: parent.id });
    const page1 = await t.http().get(`/v1/folders?parent_id=${parent.id}&per_page=2`).set(owner.auth);
    expect(page1.body.pagination).toEqual({ page: 1, per_page: 2, total_items: 5, total_pages: 3, next_cursor: expect.any(String) });
    expect(page1.body.data.map((f: any) => f.name)).toEqual(['A', 'b']);
    const page3 = await t.http().get(`/v1/folders?parent_id=${parent.id}&per_page=2&page=3`).set(owner.auth);
    expect(page3.body.data.map((f: any) => f.name)).toEqual(['e']);
    const root = await t.http().get('/v1/folders?per_page=100').set(owner.auth);
    expect(root.body.data.map((f: any) => f.name)).toContain('Listing');
    expect(root.body.data.map((f: any) => f.name)).not.toContain('A');
    expect((await t.http().get('/v1/folders?parent_id=fld_nope').set(owner.auth)).status).toBe(404);
    expect((await t.http().get('/v1/folders?per_page=101').set(owner.auth)).status).toBe(400);
    expect((await t.http().get('/v1/folders?page=1&page=2').set(owner.auth)).status).toBe(400);
  });

  it('gets one folder by id, whose parent_id chain is its path; another account\'s, a trashed one or an unknown id is not found', async () => {
    const top = (await create({ name: 'Path top' })).body.data;
    const middle = (await create({ name: 'Path middle', parent_id: top.id })).body.data;
    const leaf = (await create({ name: 'Path leaf', parent_id: middle.id })).body.data;
    const got = await t.http().get(`/v1/folders/${leaf.id}`).set(owner.auth);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ success: true, data: leaf });
    const path: string[] = [];
    for (let id: string | null = leaf.id; id !== null; ) {
      const folder: { name: string; parent_id: string | null } = (await t.http().get(`/v1/folders/${id}`).set(owner.auth).expect(200)).body.data;
      path.unshift(folder.name);
      id = folder.parent_id;
    }
    expect(path).toEqual(['Path top', 'Path middle', 'Path leaf']);

    const stranger = await createAccount(t.app);
    for (const [id, auth] of [[leaf.id, stranger.auth], ['fld_nope', owner.auth]] as const) {
      const missing = await t.http().get(`/v1/folders/${id}`).set(auth);
      expect(missing.status, id).toBe(404);
      expect(missing.body.error.code).toBe('not_found');
    }
    await t.http().delete(`/v1/folders/${middle.id}`).set(owner.auth).expect(200);
    expect((await t.http().get(`/v1/folders/${leaf.id}`).set(owner.auth)).status).toBe(404);
    expect((await t.http().get(`/v1/folders/${top.id}`).set(owner.auth)).status).toBe(200);
  });

  it('renames and moves a folder, never into itself or a descendant', async () => {
    const a = (await create({ name: 'A-tree' })).body.data;
    const b = (await create({ name: 'B', parent_id: a.id })).body.data;
    const c = (await create({ name: 'C', parent_id: b.id })).body.data;
    const self = await t.http().patch(`/v1/folders/${a.id}`).set(owner.auth).send({ parent_id: a.id });
    expect(self.status).toBe(400);
    const intoGrandchild = await t.http().patch(`/v1/folders/${a.id}`).set(owner.auth).send({ parent_id: c.id });
    expect(intoGrandchild.status).toBe(400);
    expect(intoGrandchild.body.error.code).toBe('invalid_request');
    const moved = await t.http().patch(`/v1/folders/${c.id}`).set(owner.auth).send({ parent_id: null, name: 'C-top' });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({ id: c.id, name: 'C-top', parent_id: null });
    await create({ name: 'Clash', parent_id: a.id });
    const clash = await t.http().patch(`/v1/folders/${b.id}`).set(owner.auth).send({ name: 'clash' });
    expect(clash.body.data.name).toBe('clash (1)');
    expect((await t.http().patch(`/v1/folders/${b.id}`).set(owner.auth).send({ name: '..' })).status).toBe(400);
    expect((await t.http().patch('/v1/folders/fld_nope').set(owner.auth).send({ name: 'x' })).status).toBe(404);
    const other = await createAccount(t.app);
    expect((await t.http().patch(`/v1/folders/${a.id}`).set(other.auth).send({ name: 'x' })).status).toBe(404);
    expect((await t.http().patch(`/v1/folders/${b.id}`).set(owner.auth).send({ parent_id: 'fld_nope' })).status).toBe(404);
  });

  it('leaves a folder as it was on a PATCH that changes nothing: an empty body, its own name, its own parent', async () => {
    const parent = (await create({ name: 'Still parent' })).body.data;
    const folder = (await create({ name: 'Still', parent_id: parent.id })).body.data;
    await sleep(5);
    for (const body of [{}, { name: 'Still' }, { parent_id: parent.id }, { name: 'Still', parent_id: parent.id }]) {
      const res = await t.http().patch(`/v1/folders/${folder.id}`).set(owner.auth).send(body);
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(res.body.data, JSON.stringify(body)).toEqual(folder);
    }
    expect((await t.http().get(`/v1/folders/${folder.id}`).set(owner.auth)).body.data).toEqual(folder);
    const recased = await t.http().patch(`/v1/folders/${folder.id}`).set(owner.auth).send({ name: 'STILL' });
    expect(recased.body.data.modified_at > folder.modified_at).toBe(true);
    expect((await t.http().patch(`/v1/folders/${folder.id}`).set(owner.auth).send({ parent_id: folder.id })).status).toBe(400);
  });

  it('never makes a cycle of moves that run at the same time: of A into B, B into C and C into A, one is refused', async () => {
    for (let round = 0; round < 10; round++) {
      const [a, b, c] = await Promise.all(['A', 'B', 'C'].map(async (name) => (await create({ name: `Ring ${round} ${name}` })).body.data));
      const moves = await Promise.all([[a, b], [b, c], [c, a]].map(([folder, into]) => t.http().patch(`/v1/folders/${folder.id}`).set(owner.auth).send({ parent_id: into.id })));
      expect(moves.map((move) => move.status).sort()).toEqual([200, 200, 400]);
      expect(moves.find((move) => move.status === 400)!.body.error.details.fields[0]).toEqual({ field: 'parent_id', message: expect.stringContaining('descendants') });
    }
  });

  it('deletes, and moves a folder into, a ring of folders left by concurrent moves before they took turns', async () => {
    const [a, b] = await Promise.all(['Ring A', 'Ring B'].map(async (name) => (await create({ name })).body.data));
    const folders = t.app.get(DataSource).getRepository(FolderEntity);
    await folders.update({ id: a.id }, { parentId: b.id, parentKey: b.id });
    await folders.update({ id: b.id }, { parentId: a.id, parentKey: a.id });
    const outside = (await create({ name: 'Outside' })).body.data;
    const moved = await t.http().patch(`/v1/folders/${outside.id}`).set(owner.auth).send({ parent_id: a.id });
    expect(moved.status).toBe(200);
    const deleted = await t.http().delete(`/v1/folders/${a.id}`).set(owner.auth);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toMatchObject({ folders_deleted: 3, files_deleted: 0 });
  });

  it('brings a ring of folders, and a folder whose parent is gone, back under the root on migration', async () => {
    const acct = await createAccount(t.app);
    const make = async (name: string) => (await create({ name }, acct.auth)).body.data as { id: string };
    const [a, b, c] = [await make('Ring A'), await make('Ring B'), await make('Ring C')];
    const inside = (await create({ name: 'Inside', parent_id: b.id }, acct.auth)).body.data;
    await make('Ring A (taken)');
    const taken = await make('Stays');
    const orphan = await make('Orphan');
    const folders = t.app.get(DataSource).getRepository(FolderEntity);
    const place = (id: string, parentId: string) => folders.update({ id }, { parentId, parentKey: parentId });
    // A ring as concurrent moves left it (A in B, B in C, C in A), a root folder already named as the ring's oldest, and an orphan.
    await place(a.id, b.id);
    await place(b.id, c.id);
    await place(c.id, a.id);
    await folders.update({ id: taken.id }, { name: 'Ring A', nameKey: 'ring a' });
    await place(orphan.id, 'fld_gone');
    const listed = async (parent?: string) =>
      (await t.http().get(`/v1/folders?per_page=100${parent ? `&parent_id=${parent}` : ''}`).set(acct.auth)).body.data.map((f: { name: string }) => f.name);
    expect(await listed()).toEqual(['Ring A', 'Ring A (taken)']);

    const queryRunner = t.app.get(DataSource).createQueryRunner();
    try {
      await new FolderRings1764380000000().up(queryRunner);
    } finally {
      await queryRunner.release();
    }
    expect(await listed()).toEqual(['Orphan', 'Ring A', 'Ring A (1)', 'Ring A (taken)']);
    expect(await listed(a.id)).toEqual(['Ring C']);
    expect(await listed(c.id)).toEqual(['Ring B']);
    expect(await listed(b.id)).toEqual(['Inside']);
    expect((await folders.findOneByOrFail({ id: a.id })).name).toBe('Ring A (1)');
    expect(inside.parent_id).toBe(b.id);
  });

  it('never leaves a folder moved into a folder being deleted active inside the trash', async () => {
    const root = async () => (await t.http().get('/v1/folders?per_page=100').set(owner.auth)).body.data.map((folder: { id: string }) => folder.id);
    for (let round = 0; round < 10; round++) {
      const doomed = (await create({ name: `Doomed ${round}` })).body.data;
      await create({ name: 'Inside', parent_id: doomed.id });
      const moving = (await create({ name: `Moving ${round}` })).body.data;
      const [deleted, moved] = await Promise.all([
        t.http().delete(`/v1/folders/${doomed.id}`).set(owner.auth),
        t.http().patch(`/v1/folders/${moving.id}`).set(owner.auth).send({ parent_id: doomed.id }),
      ]);
      expect(deleted.status).toBe(200);
      // Either the move came first and went to the trash with the folder, or it came second and found no folder.
      if (moved.status === 200) expect(deleted.body.data.folders_deleted).toBe(3);
      else expect([moved.status, deleted.body.data.folders_deleted, (await root()).includes(moving.id)]).toEqual([404, 2, true]);
      expect((await t.http().patch(`/v1/folders/${moving.id}`).set(owner.auth).send({ name: `Moving ${round}` })).status).toBe(moved.status === 200 ? 404 : 200);
    }
  });

  it('never leaves a file uploaded or a folder created into a folder being deleted active inside the trash', async () => {
    for (let round = 0; round < 10; round++) {
      const doomed = (await create({ name: `Filled ${round}` })).body.data;
      const inside = (await create({ name: 'Inside', parent_id: doomed.id })).body.data;
      const [deleted, uploaded, created, createdDeeper] = await Promise.all([
        t.http().delete(`/v1/folders/${doomed.id}`).set(owner.auth),
        upload(t, owner.auth, 'late', { name: `late ${round}.txt`, folderId: doomed.id }),
        create({ name: 'Late', parent_id: doomed.id }),
        create({ name: 'Later', parent_id: inside.id }),
      ]);
      expect(deleted.status).toBe(200);
      // Each came first and went to the trash with the folder, or came second and found no folder.
      expect([uploaded.status, created.status, createdDeeper.status].every((status) => [200, 201, 404].includes(status))).toBe(true);
      expect(deleted.body.data).toMatchObject({
        files_deleted: uploaded.status === 200 ? 1 : 0,
        folders_deleted: 2 + (created.status === 201 ? 1 : 0) + (createdDeeper.status === 201 ? 1 : 0),
      });
    }
  });

  it('trashes a folder created inside a subfolder while the deletion waited for that subfolder', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to interleave the two; SQLite transactions take turns');
    const doomed = (await create({ name: 'Doomed while filled' })).body.data;
    const inside = (await create({ name: 'Inside', parent_id: doomed.id })).body.data;
    // The creation holds the subfolder first; the deletion, which found the subtree before, waits for it, then must see the new folder.
    const [created, deleted] = await queueBehindRowLock(t.app, 'folders', inside.id, [
      () => create({ name: 'Created meanwhile', parent_id: inside.id }).then((res) => res),
      () => t.http().delete(`/v1/folders/${doomed.id}`).set(owner.auth).then((res) => res),
    ]);
    expect(created.status).toBe(201);
    expect(deleted.body.data).toMatchObject({ folders_deleted: 3 });
    expect((await t.app.get(DataSource).getRepository(FolderEntity).findOneByOrFail({ id: created.body.data.id })).state).toBe('trashed');
  });

  it('answers 404 to a rename that read the folder before its deletion committed', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to interleave the two; SQLite transactions take turns');
    const folder = (await create({ name: 'Renamed while deleted' })).body.data;
    const [deleted, renamed] = await queueBehindRowLock(t.app, 'folders', folder.id, [
      () => t.http().delete(`/v1/folders/${folder.id}`).set(owner.auth).then((res) => res),
      () => t.http().patch(`/v1/folders/${folder.id}`).set(owner.auth).send({ name: 'Too late' }).then((res) => res),
    ]);
    expect(deleted.status).toBe(200);
    expect(renamed.status).toBe(404);
    expect(renamed.body.error.code).toBe('not_found');
    expect((await t.app.get(DataSource).getRepository(FolderEntity).findOneByOrFail({ id: folder.id })).name).toBe('Renamed while deleted');
  });

  it('never undoes a move with a rename that read the folder before the move committed, nor the other way round', async (ctx) => {
    if (TEST_DB !== 'postgres') ctx.skip('needs a row lock to interleave the two; SQLite transactions take turns');
    for (const renameFirst of [false, true]) {
      const [from, to] = await Promise.all(['From', 'To'].map(async (name) => (await create({ name: `${name} ${renameFirst}` })).body.data));
      const folder = (await create({ name: 'Both at once', parent_id: from.id })).body.data;
      const move = () => t.http().patch(`/v1/folders/${folder.id}`).set(owner.auth).send({ parent_id: to.id }).then((res) => res);
      const rename = () => t.http().patch(`/v1/folders/${folder.id}`).set(owner.auth).send({ name: 'Renamed' }).then((res) => res);
      const answers = await queueBehindRowLock(t.app, 'folders', folder.id, renameFirst ? [rename, move] : [move, rename]);
      expect(answers.map((res) => res.status)).toEqual([200, 200]);
      // Each wrote the folder as it found it after the other: the rename kept the move, the move kept the rename.
      expect((await t.http().get(`/v1/folders/${folder.id}`).set(owner.auth)).body.data).toMatchObject({ name: 'Renamed', parent_id: to.id });
    }
  });

  it('deletes a folder with everything in it, recursively, to the trash', async () => {
    const top = (await create({ name: 'Doomed' })).body.data;
    const mid = (await create({ name: 'Mid', parent_id: top.id })).body.data;
    const deep = (await create({ name: 'Deep', parent_id: mid.id })).body.data;
    const files = [
      await uploadOk(t, owner.auth, 'one', { name: 'one.txt', folderId: top.id }),
      await uploadOk(t, owner.auth, 'two', { name: 'two.txt', folderId: mid.id }),
      await uploadOk(t, owner.auth, 'three', { name: 'three.txt', folderId: deep.id }),
    ];
    await t.app.get(DataSource).getRepository(ShareEntity).insert({
      id: newId('shr'), accountId: owner.accountId, fileId: files[2].id, token: newId('shr'), passwordHash: null, expiresAt: null,
      createdBy: owner.userId, createdAt: new Date(), revokedAt: null, invalidatedAt: null, accessCount: 0, lastAccessedAt: null,
    });
    const res = await t.http().delete(`/v1/folders/${top.id}`).set(owner.auth);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: top.id, name: 'Doomed', folders_deleted: 3, files_deleted: 3 });
    expect((await t.http().get(`/v1/folders?parent_id=${top.id}`).set(owner.auth)).status).toBe(404);
    expect((await t.http().get(`/v1/files?folder_id=${deep.id}`).set(owner.auth)).status).toBe(404);
    const trash = await t.http().get('/v1/trash?per_page=100').set(owner.auth);
    expect(trash.body.data.map((f: any) => f.id)).toEqual(expect.arrayContaining(files.map((f) => f.id)));
    const share = await t.app.get(DataSource).getRepository(ShareEntity).findOneByOrFail({ fileId: files[2].id });
    expect(share.invalidatedAt).not.toBeNull();
    // The name is free again, and a restored file goes to the root since its folder is gone.
    expect((await create({ name: 'Doomed' })).body.data.name).toBe('Doomed');
    const restored = await t.http().post(`/v1/files/${files[2].id}/restore`).set(owner.auth);
    expect(restored.body.data).toMatchObject({ id: files[2].id, folder_id: null, name: 'three.txt' });
    expect((await t.http().delete(`/v1/folders/${top.id}`).set(owner.auth)).status).toBe(404);
  });

  it('deletes a tree wider than one statement can name and 1,000 levels deep: 70,000 subfolders, a file at the bottom', async () => {
    // 70,000 ids are more bound parameters than SQLite (32,766) or PostgreSQL (65,535) take in one statement.
    const acct = await createAccount(t.app);
    const top = (await create({ name: 'Wide and deep' }, acct.auth)).body.data;
    const now = new Date().toISOString();
    const folderRow = (id: string, parentId: string, name: string) => ({
      id, account_id: acct.accountId, parent_id: parentId, parent_key: parentId, name, name_key: name.toLowerCase(), state: 'active',
      created_by: acct.userId, created_at: now, modified_at: now, deleted_at: null,
    });
    const rows = Array.from({ length: 70_000 }, (_, i) => folderRow(newId('fld'), top.id, `Wide ${i}`));
    let parent = top.id;
    for (let depth = 0; depth < 1_000; depth++) {
      rows.push(folderRow(newId('fld'), parent, `Level ${depth}`));
      parent = rows[rows.length - 1].id;
    }
    await t.app.get(DataSource).transaction(async (tx) => {
      for (let i = 0; i < rows.length; i += 1_000) await insertRows(tx, 'folders', rows.slice(i, i + 1_000));
    });
    const bottom = parent;
    // As autovacuum would soon: the statistics of a table that was all but empty would steer lookups by id off its primary key.
    if (TEST_DB === 'postgres') await t.app.get(DataSource).query('ANALYZE folders');
    const file = await uploadOk(t, acct.auth, 'deep down', { name: 'deep.txt', folderId: bottom });
    const outside = (await create({ name: 'Outside' }, acct.auth)).body.data;
    expect((await t.http().patch(`/v1/folders/${outside.id}`).set(acct.auth).send({ parent_id: bottom })).status).toBe(200);
    expect((await t.http().patch(`/v1/folders/${top.id}`).set(acct.auth).send({ parent_id: bottom })).status).toBe(400);

    const res = await t.http().delete(`/v1/folders/${top.id}`).set(acct.auth);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ folders_deleted: 1 + 70_000 + 1_000 + 1, files_deleted: 1 });
    expect(await t.app.get(DataSource).getRepository(FolderEntity).countBy({ accountId: acct.accountId, state: 'active' })).toBe(0);
    const restored = await t.http().post(`/v1/files/${file.id}/restore`).set(acct.auth);
    expect(restored.body.data).toMatchObject({ id: file.id, folder_id: null });
  }, 120_000);

  it('deletes a folder tree 5,000 levels deep in a few statements, not one per level', async () => {
    // A statement a level, with the account's folder tree locked and on SQLite every writer of every account waiting:
    // 2.8 s for 20,000 levels.
    const acct = await createAccount(t.app);
    const top = (await create({ name: 'Deep to delete' }, acct.auth)).body.data;
    const chain = await insertFolderChain(t.app, acct, top.id, 5_000);
    if (TEST_DB === 'postgres') await t.app.get(DataSource).query('ANALYZE folders');
    const bottom = await uploadOk(t, acct.auth, 'at the bottom', { name: 'bottom.txt', folderId: chain[chain.length - 1] });
    const middle = await uploadOk(t, acct.auth, 'half way', { name: 'middle.txt', folderId: chain[2_500] });

    const before = databaseCounts.statements;
    const res = await t.http().delete(`/v1/folders/${top.id}`).set(acct.auth);
    const statements = databaseCounts.statements - before;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ folders_deleted: 5_001, files_deleted: 2 });
    expect(statements).toBeLessThan(500);
    expect(await t.app.get(DataSource).getRepository(FolderEntity).countBy({ accountId: acct.accountId, state: 'active' })).toBe(0);
    const trash = (await t.http().get('/v1/trash').set(acct.auth)).body.data.map((f: { id: string }) => f.id);
    expect(trash.sort()).toEqual([bottom.id, middle.id].sort());
  }, 120_000);

  it('refuses an empty or malformed parent_id when listing with 400 naming it, rather than a folder not found', async () => {
    for (const query of ['parent_id=', 'parent_id=a%20b']) {
      const res = await t.http().get(`/v1/folders?${query}`).set(owner.auth);
      expect(res.status, query).toBe(400);
      expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['parent_id']);
    }
  });

  it('checks a move into a folder 5,000 levels deep in a few statements, not one per level', async () => {
    // Each level a statement, with the account's folder tree locked (and on SQLite every write waiting), made such a
    // move cost seconds: a tree anyone can build slowed every writer down.
    const acct = await createAccount(t.app);
    const top = (await create({ name: 'Deep' }, acct.auth)).body.data;
    const parent = (await insertFolderChain(t.app, acct, top.id, 5_000)).pop()!;
    if (TEST_DB === 'postgres') await t.app.get(DataSource).query('ANALYZE folders');
    const outside = (await create({ name: 'Outside' }, acct.auth)).body.data;
    const statements = async (request: () => Promise<{ status: number }>, status: number) => {
      const before = databaseCounts.statements;
      expect((await request()).status).toBe(status);
      return databaseCounts.statements - before;
    };
    expect(await statements(() => t.http().patch(`/v1/folders/${outside.id}`).set(acct.auth).send({ parent_id: parent }), 200)).toBeLessThan(50);
    expect(await statements(() => t.http().patch(`/v1/folders/${top.id}`).set(acct.auth).send({ parent_id: parent }), 400)).toBeLessThan(50);
    expect((await t.http().get(`/v1/folders?parent_id=${parent}`).set(acct.auth)).body.data.map((f: { id: string }) => f.id)).toEqual([outside.id]);
  });

  it('refuses a parameter or body field a folder route does not take, and changes nothing, rather than ignoring it', async () => {
    const acct = await createAccount(t.app);
    const folder = (await create({ name: 'Kept' }, acct.auth)).body.data;
    const target = (await create({ name: 'Target' }, acct.auth)).body.data;
    const refused = async (res: { status: number; body: any }, field: string) => {
      expect(res.status).toBe(400);
      expect(res.body.error.details.fields).toEqual([{ field, message: 'is not allowed' }]);
    };
    // A permanent folder deletion does not exist: `?permanent=true`, as files take it, would only have moved it to the trash.
    await refused(await t.http().delete(`/v1/folders/${folder.id}?permanent=true`).set(acct.auth), 'permanent');
    await refused(await t.http().delete(`/v1/folders/${folder.id}`).set(acct.auth).send({ recursive: false }), 'recursive');
    // parent_id in the query would have created the folder in the root, and moved nothing.
    await refused(await t.http().post(`/v1/folders?parent_id=${target.id}`).set(acct.auth).send({ name: 'Misplaced' }), 'parent_id');
    await refused(await t.http().patch(`/v1/folders/${folder.id}?parent_id=${target.id}`).set(acct.auth).send({ name: 'Renamed' }), 'parent_id');
    await refused(await t.http().get(`/v1/folders/${folder.id}?include=children`).set(acct.auth), 'include');
    const root = await t.http().get('/v1/folders').set(acct.auth);
    expect(root.body.data.map((f: { id: string; name: string; parent_id: string | null }) => [f.id, f.name, f.parent_id])).toEqual([
      [folder.id, 'Kept', null],
      [target.id, 'Target', null],
    ]);
    expect((await t.http().delete(`/v1/folders/${folder.id}`).set(acct.auth).send({})).status).toBe(200);
  });

  it('checks scopes: write to create and change, read to list and get, delete to delete', async () => {
    const reader = await createKey(t.app, owner, ['read']);
    const writer = await createKey(t.app, owner, ['write']);
    expect((await create({ name: 'nope' }, reader.auth)).status).toBe(403);
    expect((await t.http().get('/v1/folders').set(writer.auth)).status).toBe(403);
    const folder = (await create({ name: 'scoped' }, writer.auth)).body.data;
    expect((await t.http().get(`/v1/folders/${folder.id}`).set(writer.auth)).status).toBe(403);
    expect((await t.http().get(`/v1/folders/${folder.id}`).set(reader.auth)).status).toBe(200);
    expect((await t.http().delete(`/v1/folders/${folder.id}`).set(writer.auth)).status).toBe(403);
    expect((await t.http().patch(`/v1/folders/${folder.id}`).set(reader.auth).send({ name: 'x' })).status).toBe(403);
    // And each scope does allow its own operations.
    const deleter = await createKey(t.app, owner, ['delete']);
    expect((await t.http().patch(`/v1/folders/${folder.id}`).set(writer.auth).send({ name: 'scoped, renamed' })).status).toBe(200);
    const listed = await t.http().get('/v1/folders').query({ search: 'scoped, renamed' }).set(reader.auth);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((f: { name: string }) => f.name)).toEqual(['scoped, renamed']);
    expect((await t.http().delete(`/v1/folders/${folder.id}`).set(deleter.auth)).status).toBe(200);
  });
});
