import { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/common/ids.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { nameKeyOf } from '../../../src/modules/files/file-naming.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import type { TestApp } from '../../support/test-app.js';
import { uploadOk } from '../../support/uploads.js';

/**
 * `search` on files, folders and the trash: a case-insensitive substring of the name, whatever its
 * length, served by the trigram index (3 characters and more, few matches) or by the listing's own
 * index (shorter or common searches), and kept in step with every change of a name.
 */
describe('searching names', () => {
  let t: TestApp;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started));

  const fileNames = async (account: TestAccount, query: Record<string, string | number>) => {
    const res = await t.http().get('/v1/files').query({ sort: 'name_asc', per_page: 100, ...query }).set(account.auth);
    expect(res.status).toBe(200);
    return res.body.data.map((f: { name: string }) => f.name);
  };

  describe('in one folder', () => {
    let account: TestAccount;
    beforeAll(async () => {
      account = await createAccount(t.app);
      for (const name of ['Quarterly REPORT.pdf', 'report-draft.txt', '50%.txt', '5000.txt', 'x_y.txt', 'xay.txt', 'ÜBER Straße.txt', 'cafe\u0301 crème.txt', 'a.txt', 'say "hi".txt']) {
        await uploadOk(t, account.auth, 'x', { name });
      }
    });

    it('finds one and two characters as correctly as longer substrings', async () => {
      expect(await fileNames(account, { search: 'Q' })).toEqual(['Quarterly REPORT.pdf']);
      expect(await fileNames(account, { search: 'rt' })).toEqual(['Quarterly REPORT.pdf', 'report-draft.txt']);
      expect(await fileNames(account, { search: 'ORT' })).toEqual(['Quarterly REPORT.pdf', 'report-draft.txt']);
      expect(await fileNames(account, { search: 'port-dr' })).toEqual(['report-draft.txt']);
      expect(await fileNames(account, { search: 'a.' })).toEqual(['a.txt']);
      expect(await fileNames(account, { search: 'nothing' })).toEqual([]);
    });

    it('takes %, _ and \\ literally, and quotes too', async () => {
      expect(await fileNames(account, { search: '%' })).toEqual(['50%.txt']);
      expect(await fileNames(account, { search: '50%' })).toEqual(['50%.txt']);
      expect(await fileNames(account, { search: '0%.t' })).toEqual(['50%.txt']);
      expect(await fileNames(account, { search: '_' })).toEqual(['x_y.txt']);
      expect(await fileNames(account, { search: 'x_y' })).toEqual(['x_y.txt']);
      expect(await fileNames(account, { search: 'x%y' })).toEqual([]);
      expect(await fileNames(account, { search: '\\' })).toEqual([]);
      expect(await fileNames(account, { search: '\\%' })).toEqual([]);
      expect(await fileNames(account, { search: '"hi"' })).toEqual(['say "hi".txt']);
      expect(await fileNames(account, { search: '"' })).toEqual(['say "hi".txt']);
    });

    it('compares letters beyond ASCII case-insensitively, and composed with decomposed forms', async () => {
      expect(await fileNames(account, { search: 'über' })).toEqual(['ÜBER Straße.txt']);
      expect(await fileNames(account, { search: 'ü' })).toEqual(['ÜBER Straße.txt']);
      expect(await fileNames(account, { search: 'STRASSE' })).toEqual([]); // case, not case folding: ß stays ß
      expect(await fileNames(account, { search: 'STRAßE' })).toEqual(['ÜBER Straße.txt']);
      expect(await fileNames(account, { search: 'CAFÉ' })).toEqual(['caf\u00e9 cr\u00e8me.txt']);
      expect(await fileNames(account, { search: 'e\u0301' })).toEqual(['caf\u00e9 cr\u00e8me.txt']);
      expect(await fileNames(account, { search: 'È' })).toEqual(['caf\u00e9 cr\u00e8me.txt']);
    });

    it('counts and pages the matches', async () => {
      const res = await t.http().get('/v1/files').query({ search: 'r', sort: 'name_desc', per_page: 2, page: 2 }).set(account.auth);
      expect(res.body.pagination).toEqual({ page: 2, per_page: 2, total_items: 4, total_pages: 2, next_cursor: null });
      // Sorted by name key, byte by byte: über straße, report-draft, quarterly report, café crème.
      expect(res.body.data.map((f: { name: string }) => f.name)).toEqual(['Quarterly REPORT.pdf', 'caf\u00e9 cr\u00e8me.txt']);
    });
  });

  it('keeps up with renames, moves, the trash, restores and permanent deletion', async () => {
    const account = await createAccount(t.app);
    const folder = (await t.http().post('/v1/folders').set(account.auth).send({ name: 'Elsewhere' })).body.data;
    const file = await uploadOk(t, account.auth, 'x', { name: 'alpha-needle.txt' });
    const trashNames = async (search: string) =>
      (await t.http().get('/v1/trash').query({ search }).set(account.auth)).body.data.map((f: { name: string }) => f.name);
    expect(await fileNames(account, { search: 'needle' })).toEqual(['alpha-needle.txt']);

    await t.http().patch(`/v1/files/${file.id}`).set(account.auth).send({ name: 'alpha-haystack.txt' }).expect(200);
    expect(await fileNames(account, { search: 'needle' })).toEqual([]);
    expect(await fileNames(account, { search: 'hayst' })).toEqual(['alpha-haystack.txt']);

    await t.http().patch(`/v1/files/${file.id}`).set(account.auth).send({ folder_id: folder.id }).expect(200);
    expect(await fileNames(account, { search: 'hayst' })).toEqual([]);
    expect(await fileNames(account, { search: 'hayst', folder_id: folder.id })).toEqual(['alpha-haystack.txt']);

    await t.http().delete(`/v1/files/${file.id}`).set(account.auth).expect(200);
    expect(await fileNames(account, { search: 'hayst', folder_id: folder.id })).toEqual([]);
    expect(await trashNames('HAYST')).toEqual(['alpha-haystack.txt']);
    expect(await trashNames('ha')).toEqual(['alpha-haystack.txt']);
    expect(await trashNames('needle')).toEqual([]);

    await t.http().post(`/v1/files/${file.id}/restore`).set(account.auth).expect(200);
    expect(await trashNames('hayst')).toEqual([]);
    expect(await fileNames(account, { search: 'hayst', folder_id: folder.id })).toEqual(['alpha-haystack.txt']);

    await t.http().delete(`/v1/files/${file.id}`).query({ permanent: 'true' }).set(account.auth).expect(200);
    expect(await fileNames(account, { search: 'hayst', folder_id: folder.id })).toEqual([]);
    expect(await trashNames('hayst')).toEqual([]);
    // A new file may take the name again and is found.
    await uploadOk(t, account.auth, 'y', { name: 'alpha-haystack.txt', folderId: folder.id });
    expect(await fileNames(account, { search: 'alpha-hay', folder_id: folder.id })).toEqual(['alpha-haystack.txt']);
  });

  it('searches folders by substring, in step with renames', async () => {
    const account = await createAccount(t.app);
    const folderNames = async (search: string) =>
      (await t.http().get('/v1/folders').query({ search, sort: 'name_asc' }).set(account.auth)).body.data.map((f: { name: string }) => f.name);
    const zebra = (await t.http().post('/v1/folders').set(account.auth).send({ name: 'Project Zebra' })).body.data;
    await t.http().post('/v1/folders').set(account.auth).send({ name: 'Zoo 100%' }).expect(201);
    expect(await folderNames('zebra')).toEqual(['Project Zebra']);
    expect(await folderNames('z')).toEqual(['Project Zebra', 'Zoo 100%']);
    expect(await folderNames('0%')).toEqual(['Zoo 100%']);
    expect(await folderNames('_')).toEqual([]);
    await t.http().patch(`/v1/folders/${zebra.id}`).set(account.auth).send({ name: 'Project Okapi' }).expect(200);
    expect(await folderNames('zebra')).toEqual([]);
    expect(await folderNames('OKAPI')).toEqual(['Project Okapi']);
  });

  it('answers a search common to thousands of names exactly as a rare one', async () => {
    // 1,500 names with "common" (more than the trigram index hands over on SQLite), inserted directly.
    const account = await createAccount(t.app);
    const names = Array.from({ length: 1_500 }, (_, i) => `Common-${i}.txt`);
    const now = Date.now();
    const rows = names.map((name, i) =>
      Object.assign(new FileEntity(), {
        id: newId('file'), accountId: account.accountId, folderId: null, folderKey: '', name, nameKey: nameKeyOf(name), size: i, mimeType: 'text/plain',
        category: 'document', md5: '0'.repeat(32), blobKey: `files/${account.accountId}/${i}`, state: 'active', scanStatus: 'clean', thumbnailKey: null,
        uploadedBy: account.userId, createdAt: new Date(now - i), modifiedAt: new Date(now - i), deletedAt: null, deletedBy: null, recoverableUntil: null,
      }),
    );
    const repository = t.app.get(DataSource).getRepository(FileEntity);
    for (let i = 0; i < rows.length; i += 100) await repository.insert(rows.slice(i, i + 100));
    const expected = (search: string) => names.filter((name) => name.toLowerCase().includes(search.toLowerCase())).sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1));

    for (const search of ['common', 'MON-1', 'mon-14', 'on-149', '-1499.']) {
      const all = expected(search);
      // Page 2 where there is one, so that a page after the first is compared too; else the only page.
      const page = all.length > 100 ? 2 : 1;
      const res = await t.http().get('/v1/files').query({ search, sort: 'name_asc', per_page: 100, page }).set(account.auth);
      expect(res.body.pagination.total_items, search).toBe(all.length);
      const shown = res.body.data.map((f: { name: string }) => f.name);
      expect(shown.length, search).toBeGreaterThan(0);
      expect(shown, search).toEqual(all.slice((page - 1) * 100, page * 100));
    }
    // Another account's names are never found, however common.
    expect(await fileNames(owner, { search: 'common' })).toEqual([]);
  });
});
