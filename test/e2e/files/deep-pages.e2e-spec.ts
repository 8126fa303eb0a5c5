import { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/common/ids.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { nameKeyOf } from '../../../src/modules/files/file-naming.js';
import { ANCHOR_STRIDE } from '../../../src/modules/files/queries/page-anchors.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import type { TestApp } from '../../support/test-app.js';

const SORTS = ['created_asc', 'created_desc', 'modified_asc', 'modified_desc', 'name_asc', 'name_desc', 'size_asc', 'size_desc'] as const;
const FILES = 2 * ANCHOR_STRIDE + 500;
const PER_PAGE = 100;

interface Listed {
  id: string;
  name: string;
  size: number;
  created_at: string;
  modified_at: string;
}

/**
 * Page numbers far into a large folder (past several of the rows PageAnchors remembers) answer exactly
 * the rows the sort order puts there, in every sort order, and still do after files change.
 */
describe('deep page numbers', () => {
  let t: TestApp;
  let account: TestAccount;
  let files: FileEntity[];

  useTestApp((started) => ({ t } = started));
  beforeAll(async () => {
    account = await createAccount(t.app);
    const now = Date.now();
    // Sizes and times repeat, so ties must be broken by id across anchor boundaries too.
    files = Array.from({ length: FILES }, (_, i) => {
      const name = `File ${(i * 7919) % FILES}.txt`;
      const at = new Date(now - (i % 1_000) * 1_000);
      return Object.assign(new FileEntity(), {
        id: newId('file'), accountId: account.accountId, folderId: null, folderKey: '', name, nameKey: nameKeyOf(name), size: i % 37, mimeType: 'text/plain',
        category: 'document', md5: '0'.repeat(32), blobKey: `files/${account.accountId}/${i}`, state: 'active', scanStatus: 'clean', thumbnailKey: null,
        uploadedBy: account.userId, createdAt: at, modifiedAt: at, deletedAt: null, deletedBy: null, recoverableUntil: null,
      });
    });
    const repository = t.app.get(DataSource).getRepository(FileEntity);
    for (let i = 0; i < files.length; i += 250) await repository.insert(files.slice(i, i + 250));
  });

  const expected = (sort: (typeof SORTS)[number]): string[] => {
    const [field, direction] = sort.split('_');
    const key = (f: FileEntity) => (field === 'created' ? f.createdAt.toISOString() : field === 'modified' ? f.modifiedAt.toISOString() : field === 'name' ? f.nameKey : f.size);
    const sorted = [...files].sort((a, b) => {
      const [ka, kb] = [key(a), key(b)];
      return ka < kb ? -1 : ka > kb ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
    return (direction === 'asc' ? sorted : sorted.reverse()).map((f) => f.id);
  };
  const page = async (sort: string, n: number) => {
    const res = await t.http().get('/v1/files').query({ sort, per_page: PER_PAGE, page: n }).set(account.auth);
    expect(res.status).toBe(200);
    return res.body as { data: Listed[]; pagination: { total_items: number } };
  };
  // Pages on both sides of anchor boundaries, and the last one.
  const deepPages = [ANCHOR_STRIDE / PER_PAGE, ANCHOR_STRIDE / PER_PAGE + 1, (2 * ANCHOR_STRIDE) / PER_PAGE + 3, Math.ceil(FILES / PER_PAGE)];

  it.each(SORTS)('%s: deep pages hold the rows the order puts there', async (sort) => {
    const order = expected(sort);
    for (const n of deepPages) {
      const body = await page(sort, n);
      expect(body.pagination.total_items).toBe(FILES);
      expect(body.data.map((f) => f.id), `page ${n}`).toEqual(order.slice((n - 1) * PER_PAGE, n * PER_PAGE));
    }
  });

  it('moves deep pages along when files are added, removed, renamed or change size', async () => {
    const repository = t.app.get(DataSource).getRepository(FileEntity);
    for (const sort of ['name_asc', 'size_desc', 'modified_desc'] as const) await page(sort, deepPages[2]); // anchors remembered
    // A rename to the front, a size change, a new file and a removal, all before the deep pages.
    const renamed = files[10];
    renamed.name = 'A first.txt';
    renamed.nameKey = nameKeyOf(renamed.name);
    await repository.update({ id: renamed.id }, { name: renamed.name, nameKey: renamed.nameKey });
    const resized = files[20];
    resized.size = 1_000;
    resized.modifiedAt = new Date(Date.now() + 60_000);
    await repository.update({ id: resized.id }, { size: resized.size, modifiedAt: resized.modifiedAt });
    const removed = files.splice(30, 1)[0];
    await repository.delete({ id: removed.id });
    const added = Object.assign(new FileEntity(), { ...files[0], id: newId('file'), name: 'AAA new.txt', nameKey: 'aaa new.txt', size: 999 });
    await repository.insert(added);
    files.push(added);

    for (const sort of ['name_asc', 'size_desc', 'modified_desc'] as const) {
      const order = expected(sort);
      for (const n of deepPages) {
        expect((await page(sort, n)).data.map((f) => f.id), `${sort} page ${n}`).toEqual(order.slice((n - 1) * PER_PAGE, n * PER_PAGE));
      }
    }
  });
});
