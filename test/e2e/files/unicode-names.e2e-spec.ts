import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnicodeNames1764000000000 } from '../../../src/infra/database/migrations/1764000000000-unicode-names.js';
import { CaseFoldedNameKeys1764425000000 } from '../../../src/infra/database/migrations/1764425000000-case-folded-name-keys.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { FolderEntity } from '../../../src/modules/folders/folder.entity.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { seedFile, storageOf } from '../../support/files.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { upload, uploadOk } from '../../support/uploads.js';

const DOTTED_I = 'İ'.repeat(128); // 128 characters that lower-case to 256
const CAFE_NFC = 'caf\u00e9.txt';
const CAFE_NFD = 'cafe\u0301.txt';

describe('names in any Unicode form', () => {
  let t: TestApp;
  let owner: TestAccount;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createAccount(t.app);
  });
  afterAll(() => t.close());

  it('uploads, renames and lists a file named with 128 dotted capital I, and numbers a second one', async () => {
    const file = await uploadOk(t, owner.auth, 'first', { name: DOTTED_I });
    expect(file.name).toBe(DOTTED_I);
    const second = await uploadOk(t, owner.auth, 'second', { name: DOTTED_I });
    expect(second.name).toBe(`${DOTTED_I} (1)`);
    const renamed = await t.http().patch(`/v1/files/${second.id}`).set(owner.auth).send({ name: `${DOTTED_I}.txt` });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.name).toBe(`${DOTTED_I}.txt`);
    const found = await t.http().get('/v1/files').query({ search: 'İİ', sort: 'name_asc' }).set(owner.auth);
    expect(found.body.data.map((f: { name: string }) => f.name)).toEqual([DOTTED_I, `${DOTTED_I}.txt`]);
  });

  it('creates and renames a folder named with 128 dotted capital I', async () => {
    const created = await t.http().post('/v1/folders').set(owner.auth).send({ name: DOTTED_I });
    expect(created.status).toBe(201);
    const again = await t.http().post('/v1/folders').set(owner.auth).send({ name: DOTTED_I });
    expect(again.body.data.name).toBe(`${DOTTED_I} (1)`);
    const renamed = await t.http().patch(`/v1/folders/${again.body.data.id}`).set(owner.auth).send({ name: `x${DOTTED_I}` });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.name).toBe(`x${DOTTED_I}`);
  });

  it('stores composed and decomposed forms of one name as one name (NFC)', async () => {
    const folder = await t.http().post('/v1/folders').set(owner.auth).send({ name: 'nfc' });
    const folderId = folder.body.data.id;
    const composed = await uploadOk(t, owner.auth, 'one', { name: CAFE_NFC, folderId });
    const decomposed = await uploadOk(t, owner.auth, 'two', { name: CAFE_NFD, folderId });
    expect(composed.name).toBe(CAFE_NFC);
    expect(decomposed.name).toBe('caf\u00e9 (1).txt');
    const replaced = await uploadOk(t, owner.auth, 'three', { name: CAFE_NFD.toUpperCase(), folderId, overwrite: true });
    expect(replaced.id).toBe(composed.id);
    const renamed = await t.http().patch(`/v1/files/${decomposed.id}`).set(owner.auth).send({ name: `x${CAFE_NFD}` });
    expect(renamed.body.data.name).toBe(`xcaf\u00e9.txt`);
    const found = await t.http().get('/v1/files').query({ folder_id: folderId, search: 'cafe\u0301' }).set(owner.auth);
    expect(found.body.pagination.total_items).toBe(2);

    const folderNfd = await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Cafe\u0301', parent_id: folderId });
    const folderNfc = await t.http().post('/v1/folders').set(owner.auth).send({ name: 'caf\u00e9', parent_id: folderId });
    expect(folderNfd.body.data.name).toBe('Caf\u00e9');
    expect(folderNfc.body.data.name).toBe('caf\u00e9 (1)');
  });

  it('refuses a name longer than 255 characters once composed, and changes nothing', async () => {
    // U+0958 composes to nothing shorter: NFC decomposes it to two characters, so 128 become 256.
    const name = '\u0958'.repeat(128);
    const files = () => t.http().get('/v1/files').set(owner.auth);
    const before = { storage: await storageOf(t.app, owner.accountId), total: (await files()).body.pagination.total_items };
    const res = await upload(t, owner.auth, 'x', { name });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect({ storage: await storageOf(t.app, owner.accountId), total: (await files()).body.pagination.total_items }).toEqual(before);
  });

  it('gives every copy of a 255-character name its own numbered name, shortened to fit, on upload, rename and restore', async () => {
    const long = `${'x'.repeat(251)}.txt`;
    // The base shortened so that ` (n).txt` fits in 255 characters.
    const numbered = (n: number) => `${'x'.repeat(251 - ` (${n})`.length)} (${n}).txt`;
    const folderId = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'long names' })).body.data.id;
    const copies: Array<{ id: string; name: string }> = [];
    for (let copy = 0; copy < 12; copy++) {
      const res = await upload(t, owner.auth, `copy ${copy}`, { name: long, folderId });
      expect(res.status, `copy ${copy}: ${JSON.stringify(res.body.error)}`).toBe(200);
      copies.push(res.body.data);
    }
    expect(copies.map((f) => f.name)).toEqual([long, ...Array.from({ length: 11 }, (_, i) => numbered(i + 1))]);
    const other = await uploadOk(t, owner.auth, 'other', { name: 'other.txt', folderId });
    const renamed = await t.http().patch(`/v1/files/${other.id}`).set(owner.auth).send({ name: long.toUpperCase() });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.name).toBe(numbered(12).toUpperCase());
    // The first copy goes to the trash, a new one takes its name, and the restored one the next number.
    expect((await t.http().delete(`/v1/files/${copies[0]!.id}`).set(owner.auth)).status).toBe(200);
    expect((await uploadOk(t, owner.auth, 'newest', { name: long, folderId })).name).toBe(long);
    const restored = await t.http().post(`/v1/files/${copies[0]!.id}/restore`).set(owner.auth);
    expect(restored.status).toBe(200);
    expect(restored.body.data.name).toBe(numbered(13));
    const listed = await t.http().get('/v1/files').query({ folder_id: folderId, per_page: 100 }).set(owner.auth);
    expect(listed.body.pagination.total_items).toBe(14);
  });

  it('numbers a taken name whose extension leaves no room, shortening the whole name to 255 characters', async () => {
    const name = `a.${'x'.repeat(253)}`;
    const folderId = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'no room' })).body.data.id;
    const names: string[] = [];
    for (let copy = 0; copy < 3; copy++) {
      const res = await upload(t, owner.auth, `copy ${copy}`, { name, folderId });
      expect(res.status, `copy ${copy}: ${JSON.stringify(res.body.error)}`).toBe(200);
      names.push(res.body.data.name);
    }
    expect(names).toEqual([name, `${name.slice(0, 251)} (1)`, `${name.slice(0, 251)} (2)`]);
    const listed = await t.http().get('/v1/files').query({ folder_id: folderId, sort: 'name_asc' }).set(owner.auth);
    expect(listed.body.data.map((f: { name: string }) => f.name)).toEqual([`${name.slice(0, 251)} (1)`, `${name.slice(0, 251)} (2)`, name]);
  });

  it('refuses a name with an unpaired surrogate, in an upload and a rename, with 400 naming the field', async () => {
    const before = (await t.http().get('/v1/files').set(owner.auth)).body.pagination.total_items;
    // A form field in UTF-16LE is how such a name reaches a multipart upload: the bytes of "\ud800.txt".
    const boundary = 'unpaired-surrogate';
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\nContent-Type: text/plain; charset=utf-16le\r\n\r\n`),
      Buffer.from('\ud800.txt', 'utf16le'),
      Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="file.bin"\r\n\r\nbytes\r\n--${boundary}--\r\n`),
    ]);
    const uploaded = await fetch(`${t.baseUrl}/v1/files/upload`, { method: 'POST', headers: { ...owner.auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
    const uploadAnswer = (await uploaded.json()) as { error: { code: string; details: unknown } };
    expect(uploaded.status).toBe(400);
    expect(uploadAnswer.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'name', message: expect.stringMatching(/Unicode/) }] } });
    expect((await t.http().get('/v1/files').set(owner.auth)).body.pagination.total_items).toBe(before);

    const file = await uploadOk(t, owner.auth, 'x', { name: 'surrogates.txt' });
    for (const name of ['\ud800.txt', 'a\udfff', '\ude00\ud83d']) {
      const res = await t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ name });
      expect(res.status, JSON.stringify(name)).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'name', message: expect.stringMatching(/Unicode/) }] } });
    }
    expect((await t.http().get(`/v1/files/${file.id}`).set(owner.auth)).body.data.name).toBe('surrogates.txt');
  });

  it('rewrites existing names to NFC on migration, numbering a sibling that becomes a duplicate of a name already in NFC', async () => {
    const account = await createAccount(t.app);
    // Rows as the previous rules stored them: the name as given, the key its plain lower case.
    const first = await seedFile(t.app, account, { name: 'Cafe\u0301.txt' });
    const second = await seedFile(t.app, account, { name: 'CAF\u00c9.TXT' });
    const dotted = await seedFile(t.app, account, { name: 'İstanbul.txt' });
    const dataSource = t.app.get(DataSource);
    const queryRunner = dataSource.createQueryRunner();
    try {
      await new UnicodeNames1764000000000().up(queryRunner);
    } finally {
      await queryRunner.release();
    }
    const rows = await dataSource.getRepository(FileEntity).find({ where: { accountId: account.accountId }, order: { createdAt: 'ASC', id: 'ASC' } });
    const byId = new Map(rows.map((r) => [r.id, r]));
    // The name already in NFC keeps it; the one that had to change yields and takes the suffix.
    expect(byId.get(second.id)).toMatchObject({ name: 'CAF\u00c9.TXT', nameKey: 'caf\u00e9.txt' });
    expect(byId.get(first.id)).toMatchObject({ name: 'Caf\u00e9 (1).txt', nameKey: 'caf\u00e9 (1).txt' });
    expect(byId.get(dotted.id)).toMatchObject({ name: 'İstanbul.txt', nameKey: 'istanbul.txt' });
  });

  it('finds a name by any case form of it, and numbers a sibling name that is another case form of a taken one', async () => {
    const folderId = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'case forms' })).body.data.id;
    const names: string[] = [];
    for (const name of ['ΟΔΟΣ.txt', 'οδος.txt', 'İzmir.txt', 'IZMİR.txt', 'ılık.txt', 'ILIK.txt']) names.push((await uploadOk(t, owner.auth, name, { name, folderId })).name);
    expect(names).toEqual(['ΟΔΟΣ.txt', 'οδος (1).txt', 'İzmir.txt', 'IZMİR (1).txt', 'ılık.txt', 'ILIK (1).txt']);
    const found = async (search: string) =>
      (await t.http().get('/v1/files').query({ folder_id: folderId, search, sort: 'created_asc' }).set(owner.auth)).body.data.map((f: { name: string }) => f.name);
    expect(await found('οδος')).toEqual(['ΟΔΟΣ.txt', 'οδος (1).txt']);
    expect(await found('İZMİR')).toEqual(['İzmir.txt', 'IZMİR (1).txt']);
    expect(await found('izmir')).toEqual(['İzmir.txt', 'IZMİR (1).txt']);
    expect(await found('ılık')).toEqual(['ılık.txt', 'ILIK (1).txt']);
    const folders = [];
    for (const name of ['ΟΔΟΣ', 'οδος']) folders.push((await t.http().post('/v1/folders').set(owner.auth).send({ name, parent_id: folderId })).body.data.name);
    expect(folders).toEqual(['ΟΔΟΣ', 'οδος (1)']);
  });

  it('rekeys existing names on migration, numbering a sibling that becomes another case form of a taken name', async () => {
    const account = await createAccount(t.app);
    const dataSource = t.app.get(DataSource);
    const files = dataSource.getRepository(FileEntity);
    // Keys as the previous rule made them: each character lower-cased alone.
    const upper = await seedFile(t.app, account, { name: 'ΟΔΟΣ.txt' });
    const lower = await seedFile(t.app, account, { name: 'οδος.txt' });
    const dotted = await seedFile(t.app, account, { name: 'İzmir.txt' });
    await files.update({ id: dotted.id }, { nameKey: 'İzmir.txt' });
    const folders = dataSource.getRepository(FolderEntity);
    const upperFolder = (await t.http().post('/v1/folders').set(account.auth).send({ name: 'ΟΔΟΣ' })).body.data;
    const lowerFolder = (await t.http().post('/v1/folders').set(account.auth).send({ name: 'other' })).body.data;
    await folders.update({ id: lowerFolder.id }, { name: 'οδος', nameKey: 'οδος' });
    const queryRunner = dataSource.createQueryRunner();
    try {
      await new CaseFoldedNameKeys1764425000000().up(queryRunner);
    } finally {
      await queryRunner.release();
    }
    expect(await files.findOneByOrFail({ id: upper.id })).toMatchObject({ name: 'ΟΔΟΣ.txt', nameKey: 'οδοσ.txt' });
    expect(await files.findOneByOrFail({ id: lower.id })).toMatchObject({ name: 'οδος (1).txt', nameKey: 'οδοσ (1).txt' });
    expect(await files.findOneByOrFail({ id: dotted.id })).toMatchObject({ name: 'İzmir.txt', nameKey: 'izmir.txt' });
    expect(await folders.findOneByOrFail({ id: upperFolder.id })).toMatchObject({ name: 'ΟΔΟΣ', nameKey: 'οδοσ' });
    expect(await folders.findOneByOrFail({ id: lowerFolder.id })).toMatchObject({ name: 'οδος (1)', nameKey: 'οδοσ (1)' });
    const found = await t.http().get('/v1/files').query({ search: 'izmir' }).set(account.auth);
    expect(found.body.data.map((f: { name: string }) => f.name)).toEqual(['İzmir.txt']);
  });
});
