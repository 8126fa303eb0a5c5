import { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import { seedFile } from '../../support/files.js';
import type { TestApp } from '../../support/test-app.js';
import { uploadOk } from '../../support/uploads.js';

const FILE_SORTS = ['created_asc', 'created_desc', 'modified_asc', 'modified_desc', 'name_asc', 'name_desc', 'size_asc', 'size_desc'];

interface Listed {
  id: string;
  [field: string]: unknown;
}

describe('keyset cursors on every listing', () => {
  let t: TestApp;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started));

  /** Follows next_cursor from the first page to the last; answers every item and every pagination object. */
  async function walk(path: string, auth = owner.auth, perPage = 4) {
    const items: Listed[] = [];
    const paginations: Record<string, unknown>[] = [];
    const separator = path.includes('?') ? '&' : '?';
    let cursor: string | null = null;
    for (let guard = 0; guard < 1000; guard++) {
      const url: string = `${path}${separator}per_page=${perPage}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await t.http().get(url).set(auth);
      expect(res.status, `${url}: ${JSON.stringify(res.body)}`).toBe(200);
      items.push(...res.body.data);
      paginations.push(res.body.pagination);
      cursor = res.body.pagination.next_cursor;
      if (cursor === null) return { items, paginations };
    }
    throw new Error(`${path} never ended`);
  }

  /** Every item of a listing through page numbers. */
  async function pages(path: string, perPage = 4) {
    const separator = path.includes('?') ? '&' : '?';
    const items: Listed[] = [];
    for (let page = 1; ; page++) {
      const res = await t.http().get(`${path}${separator}per_page=${perPage}&page=${page}`).set(owner.auth).expect(200);
      items.push(...res.body.data);
      if (page >= res.body.pagination.total_pages) return items;
    }
  }

  const ids = (items: Listed[]) => items.map((item) => item.id);

  describe('files', () => {
    let folderId: string;

    beforeAll(async () => {
      folderId = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Walked' })).body.data.id;
      // Repeated sizes, mixed case names, and some exactly equal timestamps: ties that only the id breaks.
      const files: FileEntity[] = [];
      for (let i = 0; i < 19; i++) files.push(await seedFile(t.app, owner, { folderId, name: `${'bAcaB'[i % 5]}${i}.txt`, content: 'x'.repeat(i % 4) }));
      const repo = t.app.get(DataSource).getRepository(FileEntity);
      for (const file of files.slice(1, 6)) await repo.update({ id: file.id }, { createdAt: files[0].createdAt, modifiedAt: files[0].modifiedAt });
    });

    it.each(FILE_SORTS)('walks %s by cursor through the same items, in the same order, as by page number', async (sort) => {
      const byNumber = await pages(`/v1/files?folder_id=${folderId}&sort=${sort}`);
      const { items, paginations } = await walk(`/v1/files?folder_id=${folderId}&sort=${sort}`);
      expect(byNumber).toHaveLength(19);
      expect(ids(items)).toEqual(ids(byNumber));
      // Page numbers and totals as the specification has them; next_cursor null on the last page only.
      expect(paginations.map((p) => p.page)).toEqual([1, 2, 3, 4, 5]);
      expect(paginations.every((p) => p.total_items === 19 && p.total_pages === 5 && p.per_page === 4)).toBe(true);
      expect(paginations.map((p) => p.next_cursor === null)).toEqual([false, false, false, false, true]);
    });

    it('continues with another per_page from the same position', async () => {
      const first = await t.http().get(`/v1/files?folder_id=${folderId}&sort=name_asc&per_page=5`).set(owner.auth).expect(200);
      const rest = await t.http().get(`/v1/files?folder_id=${folderId}&sort=name_asc&per_page=100&cursor=${first.body.pagination.next_cursor}`).set(owner.auth).expect(200);
      const all = await t.http().get(`/v1/files?folder_id=${folderId}&sort=name_asc&per_page=100`).set(owner.auth).expect(200);
      expect([...ids(first.body.data), ...ids(rest.body.data)]).toEqual(ids(all.body.data));
      expect(rest.body.pagination).toEqual({ page: 1, per_page: 100, total_items: 19, total_pages: 1, next_cursor: null });
    });

    it('takes back its own cursor after the longest name there is: 255 characters that JSON writes as six each', async () => {
      const folder = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Longest cursor' })).body.data.id;
      const names = ['\u0001'.repeat(255), '\u0002'.repeat(255)];
      for (const name of names) {
        const file = await seedFile(t.app, owner, { folderId: folder });
        await t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ name }).expect(200);
      }
      const { items } = await walk(`/v1/files?folder_id=${folder}&sort=name_asc`, owner.auth, 1);
      expect(items.map((item) => (item as unknown as { name: string }).name)).toEqual(names);
    });

    it('refuses a cursor that was altered, belongs to another query or account, or comes with page', async () => {
      const base = `/v1/files?folder_id=${folderId}&sort=size_desc&per_page=3`;
      const cursor: string = (await t.http().get(base).set(owner.auth).expect(200)).body.pagination.next_cursor;
      const [payload, mac] = cursor.split('.');
      const position = JSON.parse(Buffer.from(payload, 'base64url').toString());
      const moved = Buffer.from(JSON.stringify([position[0], 0, position[2], position[3]])).toString('base64url');
      const stranger = await createAccount(t.app);
      for (let i = 0; i < 2; i++) await seedFile(t.app, owner, { name: `root-${i}.txt` });
      const rootCursor: string = (await t.http().get('/v1/files?per_page=1').set(owner.auth).expect(200)).body.pagination.next_cursor;
      const refused = [
        [`${base}&cursor=${moved}.${mac}`, owner],
        // Its first character changed (into one that is surely different).
        [`${base}&cursor=${payload}.${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`, owner],
        [`${base}&cursor=not-a-cursor`, owner],
        [`/v1/files?folder_id=${folderId}&sort=size_asc&per_page=3&cursor=${cursor}`, owner],
        [`/v1/files?folder_id=${folderId}&sort=size_desc&search=a&per_page=3&cursor=${cursor}`, owner],
        [`/v1/files?folder_id=${folderId}&sort=size_desc&type=image&per_page=3&cursor=${cursor}`, owner],
        [`/v1/files?sort=size_desc&per_page=3&cursor=${cursor}`, owner],
        [`/v1/trash?per_page=3&cursor=${cursor}`, owner],
        [`/v1/folders?per_page=3&cursor=${cursor}`, owner],
        [`/v1/files?per_page=1&cursor=${rootCursor}`, stranger],
      ] as const;
      for (const [url, account] of refused) {
        const res = await t.http().get(url).set(account.auth);
        expect(res.status, url).toBe(400);
        expect(res.body.error.code).toBe('invalid_request');
        expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['cursor']);
      }
      const both = await t.http().get(`${base}&page=2&cursor=${cursor}`).set(owner.auth).expect(400);
      expect(both.body.error.details.fields).toEqual([{ field: 'cursor', message: 'cannot be combined with page' }]);
      // The untouched cursors still work with the same query and account.
      await t.http().get(`${base}&cursor=${cursor}`).set(owner.auth).expect(200);
      await t.http().get(`/v1/files?per_page=1&cursor=${rootCursor}`).set(owner.auth).expect(200);
    });

    it.each(FILE_SORTS)('never repeats or skips a file while others upload and delete (%s)', async (sort) => {
      const account = await createAccount(t.app);
      const folder = (await t.http().post('/v1/folders').set(account.auth).send({ name: 'Busy' })).body.data.id as string;
      const names = () => `${Math.random().toString(36).slice(2, 8)}.txt`;
      const stable = new Set<string>();
      const doomed: string[] = [];
      // Every third one is deleted while the reader pages, so deletions fall before and after its position in every order.
      for (let i = 0; i < 45; i++) {
        const { id } = await seedFile(t.app, account, { folderId: folder, name: names(), content: 'y'.repeat(i % 7) });
        if (i % 3 === 2) doomed.push(id);
        else stable.add(id);
      }

      let paging = true;
      const writes = { inserted: 0, deleted: 0 };
      // Two writers, all the while the reader pages: new files land before and after its position, doomed ones leave.
      const writer = async () => {
        while (paging) {
          await uploadOk(t, account.auth, 'z'.repeat(Math.floor(Math.random() * 7)), { name: names(), folderId: folder });
          writes.inserted++;
          const victim = doomed.pop();
          if (victim) {
            await t.http().delete(`/v1/files/${victim}`).set(account.auth).expect(200);
            writes.deleted++;
          }
        }
      };
      const reader = async () => {
        try {
          const items: Listed[] = [];
          let cursor: string | null = null;
          do {
            const res: { body: { data: Listed[]; pagination: { next_cursor: string | null } } } = await t.http().get(`/v1/files?folder_id=${folder}&sort=${sort}&per_page=3${cursor ? `&cursor=${cursor}` : ''}`).set(account.auth).expect(200);
            items.push(...res.body.data);
            cursor = res.body.pagination.next_cursor;
            // Give the writers a turn between pages.
            await new Promise((resolve) => setTimeout(resolve, 5));
          } while (cursor);
          return items;
        } finally {
          paging = false;
        }
      };
      const [items] = await Promise.all([reader(), writer(), writer()]);

      expect(writes.inserted).toBeGreaterThan(0);
      expect(writes.deleted).toBeGreaterThan(0);
      const seen = ids(items);
      expect(new Set(seen).size, 'no file twice').toBe(seen.length);
      expect([...stable].filter((id) => !seen.includes(id)), 'every file present throughout was listed').toEqual([]);
      // And in order: each item after the one before it in the sort.
      const [field, direction] = sort.split('_');
      const key = (f: Listed) => (field === 'created' ? f.created_at : field === 'modified' ? f.modified_at : field === 'name' ? String(f.name).toLowerCase() : f.size) as string | number;
      for (let i = 1; i < items.length; i++) {
        const [a, b] = direction === 'asc' ? [items[i - 1], items[i]] : [items[i], items[i - 1]];
        expect(key(a) < key(b) || (key(a) === key(b) && a.id < b.id), `${sort} at ${i}`).toBe(true);
      }
    });
  });

  describe('folders, trash, shares and webhook deliveries', () => {
    let parentId: string;
    let webhookId: string;

    beforeAll(async () => {
      parentId = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Parent' })).body.data.id;
      for (const name of ['b', 'A', 'c', 'a (1)', 'B (1)', 'd', 'e', 'E (1)', 'f']) {
        await t.http().post('/v1/folders').set(owner.auth).send({ name, parent_id: parentId }).expect(201);
      }
      const shared = await uploadOk(t, owner.auth, 'shared', { name: 'shared.txt' });
      for (let i = 0; i < 9; i++) await t.http().post('/v1/shares').set(owner.auth).send({ file_id: shared.id }).expect(201);
      for (let i = 0; i < 9; i++) {
        const file = await seedFile(t.app, owner, { name: `trashed-${i}.txt` });
        await t.http().delete(`/v1/files/${file.id}`).set(owner.auth).expect(200);
      }
      webhookId = (await t.http().post('/v1/webhooks').set(owner.auth).send({ url: 'http://127.0.0.1:9/hook', events: ['file.uploaded'], active: false })).body.data.id;
      for (let i = 0; i < 9; i++) await t.http().post(`/v1/webhooks/${webhookId}/test`).set(owner.auth).expect(202);
    });

    it.each([
      ['folders name_asc', () => `/v1/folders?parent_id=${parentId}&sort=name_asc`],
      ['folders name_desc', () => `/v1/folders?parent_id=${parentId}&sort=name_desc`],
      ['folders created_asc', () => `/v1/folders?parent_id=${parentId}&sort=created_asc`],
      ['folders created_desc', () => `/v1/folders?parent_id=${parentId}&sort=created_desc`],
      ['folders modified_asc', () => `/v1/folders?parent_id=${parentId}&sort=modified_asc`],
      ['folders modified_desc', () => `/v1/folders?parent_id=${parentId}&sort=modified_desc`],
      ['trash deleted_desc', () => '/v1/trash?sort=deleted_desc'],
      ['trash deleted_asc', () => '/v1/trash?sort=deleted_asc'],
      ['shares', () => '/v1/shares'],
      ['webhook deliveries', () => `/v1/webhooks/${webhookId}/deliveries`],
    ])('%s: by cursor, the same items in the same order as by page number', async (_, path) => {
      const byNumber = await pages(path());
      const { items, paginations } = await walk(path());
      expect(byNumber).toHaveLength(9);
      expect(ids(items)).toEqual(ids(byNumber));
      expect(paginations.map((p) => [p.page, p.total_items, p.next_cursor === null])).toEqual([
        [1, 9, false],
        [2, 9, false],
        [3, 9, true],
      ]);
    });

    it('refuses a cursor of another listing or filter', async () => {
      const shares = (await t.http().get('/v1/shares?per_page=2').set(owner.auth).expect(200)).body.pagination.next_cursor;
      await t.http().get(`/v1/shares?per_page=2&file_id=file_0&cursor=${shares}`).set(owner.auth).expect(400);
      await t.http().get(`/v1/webhooks/${webhookId}/deliveries?per_page=2&cursor=${shares}`).set(owner.auth).expect(400);
      const deliveries = (await t.http().get(`/v1/webhooks/${webhookId}/deliveries?per_page=2`).set(owner.auth).expect(200)).body.pagination.next_cursor;
      await t.http().get(`/v1/webhooks/${webhookId}/deliveries?per_page=2&status=failed&cursor=${deliveries}`).set(owner.auth).expect(400);
      const trash = (await t.http().get('/v1/trash?per_page=2').set(owner.auth).expect(200)).body.pagination.next_cursor;
      await t.http().get(`/v1/trash?per_page=2&sort=deleted_asc&cursor=${trash}`).set(owner.auth).expect(400);
      await t.http().get(`/v1/trash?per_page=2&cursor=${trash}`).set(owner.auth).expect(200);
    });
  });
});
