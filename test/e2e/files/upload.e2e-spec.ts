import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { OutboxEventEntity } from '../../../src/infra/outbox/outbox-event.entity.js';
import { Readable } from 'node:stream';
import { BlobStorage, blobKeys } from '../../../src/infra/storage/blob-storage.js';
import { ServerInstance } from '../../../src/infra/instances/server-instance.js';
import { Transactions } from '../../../src/infra/database/transactions.js';
import { AccountEntity } from '../../../src/modules/accounts/account.entity.js';
import { UploadReservationEntity } from '../../../src/modules/files/upload/upload-reservation.entity.js';
import { UploadSweeper } from '../../../src/modules/files/upload/upload-sweeper.js';
import { UploadHasher } from '../../../src/modules/files/upload/hashing/upload-hasher.js';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { QUEUES } from '../../../src/infra/queue/queue-names.js';
import { mediaJobId, type MediaJobData } from '../../../src/modules/media/media-jobs.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { TEST_DB, type TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';
import { listBlobs, onTestServer, rawUpload, upload, uploadOk } from '../../support/uploads.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { eventually, sleep } from '../../support/time.js';
import { scanSettled } from '../../support/files.js';
import { pngImage } from '../../support/media.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const MiB = 1024 * 1024;

describe('uploading files', () => {
  let t: TestApp;
  let owner: TestAccount;

  const account = (id: string) => t.app.get(DataSource).getRepository(AccountEntity).findOneByOrFail({ id });
  const events = async (accountId: string, name: string) =>
    (await t.app.get(DataSource).getRepository(OutboxEventEntity).find({ where: { accountId, event: name }, order: { occurredAt: 'ASC' } })).map((e) =>
      JSON.parse(e.payload),
    );
  /** Nothing held after a failed upload: no temporary bytes and no reserved quota. */
  const expectNothingHeld = async (accountId: string) => {
    await eventually(async () => listBlobs(t, 'tmp').length === 0 && (await account(accountId)).storageReserved === 0, 10_000, 'temporary bytes and reserved quota to be given back');
  };

  useTestApp((started) => ({ t, owner } = started));

  it('stores a file and answers the File object with its MD5', async () => {
    const content = 'hello, world\n';
    const res = await upload(t, owner.auth, content, { filename: 'notes.txt' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.stringMatching(/^file_/),
        name: 'notes.txt',
        size: 13,
        type: 'text/plain',
        category: 'document',
        folder_id: null,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        modified_at: res.body.data.created_at,
        download_url: expect.stringMatching(new RegExp(`/v1/files/${res.body.data.id}/download\\?expires=\\d+&signature=[0-9a-f]{64}$`)),
        md5_hash: createHash('md5').update(content).digest('hex'),
        scan_status: 'pending',
      },
    });
    expect(res.body.data).not.toHaveProperty('thumbnail_url');
    expect((await account(owner.accountId)).storageUsed).toBe(13);
    expect(listBlobs(t, 'tmp')).toEqual([]);
  });

  it.each([true, false])('answers the right MD5 for files of many MiB, several at once, and after a refused upload (hashing thread: %s)', async (onThread) => {
    const hasher = t.app.get(UploadHasher);
    const before = hasher.onThread;
    hasher.onThread = onThread;
    try {
      // Sizes around the hashing thread's 512 KiB slots: one byte short, exact, one over, many slots and a tail.
      const sizes = [512 * 1024 - 1, 512 * 1024, 512 * 1024 + 1, 5 * MiB + 7, 9 * MiB + 12345];
      const contents = sizes.map((size) => randomBytes(size));
      const files = await Promise.all(contents.map((content, i) => uploadOk(t, owner.auth, content, { name: `hashed-${onThread}-${i}.bin` })));
      expect(files.map((f) => [f.size, f.md5_hash])).toEqual(contents.map((c) => [c.length, createHash('md5').update(c).digest('hex')]));
      for (const [i, file] of files.entries()) {
        const stored = Buffer.from(await (await fetch(onTestServer(t, file.download_url))).arrayBuffer());
        expect(stored.equals(contents[i]!)).toBe(true);
      }

      const free = await createAccount(t.app, { plan: 'free' });
      const refused = await rawUpload(t, free.auth, { fileSize: 100 * MiB + 1 });
      expect(refused.status).toBe(413);
      const after = await uploadOk(t, free.auth, contents[3]!);
      expect(after.md5_hash).toBe(createHash('md5').update(contents[3]!).digest('hex'));
    } finally {
      hasher.onThread = before;
    }
  });

  it("keeps an account's files in at most 256 directories, and leaves no directory behind a deleted file", async () => {
    const account = await createAccount(t.app);
    const files = [];
    for (let i = 0; i < 20; i++) files.push(await uploadOk(t, account.auth, `content ${i}`, { name: `f${i}.txt` }));
    const accountDir = join(t.config.storage.dir, 'files', account.accountId);
    const shards = readdirSync(accountDir);
    // One directory per distinct last two hex digits of the file ids, each holding its files' blobs directly.
    expect(shards.sort()).toEqual([...new Set(files.map((file) => file.id.slice(-2)))].sort());
    expect(shards.every((shard) => readdirSync(join(accountDir, shard), { withFileTypes: true }).every((entry) => entry.isFile()))).toBe(true);
    for (const file of files) await t.http().delete(`/v1/files/${file.id}?permanent=true`).set(account.auth).expect(200);
    expect(listBlobs(t, `files/${account.accountId}`)).toEqual([]);
    expect(readdirSync(accountDir).sort()).toEqual(shards.sort());
  });

  it('stores the first MiB of a large upload while its quota reservation waits for the database, and no more', async () => {
    const uploader = await createAccount(t.app);
    // The reservation's transaction waits behind this one: on SQLite for the connection, on PostgreSQL for the account row.
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = t.app.get(Transactions).run(async (tx) => {
      if (TEST_DB === 'postgres') await tx.query('SELECT id FROM accounts WHERE id = $1 FOR UPDATE', [uploader.accountId]);
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await isLocked;
    const content = randomBytes(6 * MiB);
    const uploading = upload(t, uploader.auth, content, { name: 'reserved-late.bin' });
    const stored = () => listBlobs(t, 'tmp/').reduce((total, key) => total + statSync(join(t.config.storage.dir, key)).size, 0);
    try {
      await eventually(async () => stored() > 0, 10_000, 'the first bytes in temporary storage');
      // Until the stored bytes stop growing (a slow machine may still be writing the first MiB), then no more than it.
      let previous = -1;
      await eventually(async () => {
        const now = stored();
        const settled = now === previous;
        previous = now;
        if (!settled) await sleep(250);
        return settled;
      }, 10_000, 'the stored bytes to stop growing');
      expect(stored()).toBeLessThanOrEqual(MiB);
    } finally {
      release();
      await holding;
    }
    const res = await uploading;
    expect(res.status).toBe(200);
    expect(res.body.data.md5_hash).toBe(createHash('md5').update(content).digest('hex'));
    expect((await account(uploader.accountId)).storageReserved).toBe(0);
  });

  it('detects the type from the content, then the extension, then falls back to octet-stream', async () => {
    expect((await uploadOk(t, owner.auth, PNG, { filename: 'looks-like-text.txt' })).type).toBe('image/png');
    expect((await uploadOk(t, owner.auth, PNG, { filename: 'looks-like-text.txt' })).category).toBe('image');
    expect((await uploadOk(t, owner.auth, 'a,b\n1,2\n', { filename: 'table.csv' })).type).toBe('text/csv');
    const unknown = await uploadOk(t, owner.auth, Buffer.from([0, 1, 2, 3]), { filename: 'mystery' });
    expect([unknown.type, unknown.category]).toEqual(['application/octet-stream', 'other']);
  });

  it('accepts the form fields before or after the file part, and an empty file', async () => {
    const before = await uploadOk(t, owner.auth, 'x', { name: 'fields-before.txt' });
    const after = await uploadOk(t, owner.auth, 'x', { name: 'fields-after.txt', fieldsAfterFile: true });
    expect([before.name, after.name]).toEqual(['fields-before.txt', 'fields-after.txt']);
    const empty = await uploadOk(t, owner.auth, '', { filename: 'empty.txt' });
    expect([empty.size, empty.md5_hash]).toEqual([0, 'd41d8cd98f00b204e9800998ecf8427e']);
  });

  it('takes an empty folder_id or overwrite field as not given, as an HTML form or Swagger UI sends them', async () => {
    const send = async (content: string) => {
      const form = new FormData();
      for (const field of ['folder_id', 'overwrite']) form.append(field, '');
      form.append('file', new Blob([content]), 'blank-fields.txt');
      const res = await fetch(`${t.baseUrl}/v1/files/upload`, { method: 'POST', headers: owner.auth, body: form });
      return { status: res.status, body: (await res.json()) as any };
    };
    const first = await send('x');
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ name: 'blank-fields.txt', folder_id: null });
    // overwrite left empty is false: the same name again is numbered, not replaced.
    expect((await send('y')).body.data.name).toBe('blank-fields (1).txt');
  });

  it('keeps a UTF-8 file name exactly', async () => {
    expect((await uploadOk(t, owner.auth, 'x', { filename: 'résumé 履歴書.txt' })).name).toBe('résumé 履歴書.txt');
  });

  it('refuses a request without a file part, with the file in another field or with an unknown field, with 400 (415 for a body that is not multipart) and stores nothing', async () => {
    const before = [(await account(owner.accountId)).storageUsed, (await t.http().get('/v1/files').set(owner.auth)).body.pagination.total_items];
    const form = new FormData();
    form.append('name', 'x.txt');
    const noFile = await fetch(`${t.baseUrl}/v1/files/upload`, { method: 'POST', headers: owner.auth, body: form });
    expect(noFile.status).toBe(400);
    expect(((await noFile.json()) as any).error.code).toBe('invalid_request');

    // Not multipart at all: 415 naming the type to send (request-bodies.e2e-spec.ts).
    const json = await t.http().post('/v1/files/upload').set(owner.auth).send({ name: 'x' });
    expect(json.status).toBe(415);

    const wrongField = new FormData();
    wrongField.append('document', new Blob(['abc']), 'a.txt');
    const wrong = await fetch(`${t.baseUrl}/v1/files/upload`, { method: 'POST', headers: owner.auth, body: wrongField });
    expect(wrong.status).toBe(400);

    const two = new FormData();
    two.append('file', new Blob(['abc']), 'a.txt');
    two.append('file', new Blob(['def']), 'b.txt');
    const twoFiles = await fetch(`${t.baseUrl}/v1/files/upload`, { method: 'POST', headers: owner.auth, body: two });
    expect(twoFiles.status).toBe(400);

    const withUnknown = new FormData();
    withUnknown.append('colour', 'red');
    withUnknown.append('file', new Blob(['abc']), 'a.txt');
    const unknownField = await fetch(`${t.baseUrl}/v1/files/upload`, { method: 'POST', headers: owner.auth, body: withUnknown });
    expect(unknownField.status).toBe(400);
    expect(((await unknownField.json()) as any).error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'colour' }] } });

    await expectNothingHeld(owner.accountId);
    const after = await account(owner.accountId);
    expect([after.storageUsed, (await t.http().get('/v1/files').set(owner.auth)).body.pagination.total_items]).toEqual(before);
  });

  it.each([['../escape.txt'], ['a/b.txt'], ['a\\b.txt'], ['.'], ['..'], [''], ['x'.repeat(256)], ['nul\0byte']])(
    'refuses the name %j with invalid_request and keeps no bytes',
    async (name) => {
      const before = (await account(owner.accountId)).storageUsed;
      const res = await upload(t, owner.auth, 'content', { name });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect((await account(owner.accountId)).storageUsed).toBe(before);
      await expectNothingHeld(owner.accountId);
    },
  );

  it('never lets a path in the part file name reach storage', async () => {
    const file = await uploadOk(t, owner.auth, 'secret', { filename: '../../../../etc/passwd' });
    expect(file.name).toBe('passwd');
    // The file's bytes are under its own id, and nothing anywhere in storage was named after the part's path.
    expect(listBlobs(t, blobKeys.filePrefix(owner.accountId, file.id))).toEqual([expect.stringMatching(new RegExp(`^${blobKeys.filePrefix(owner.accountId, file.id)}upl_[0-9a-z]+$`))]);
    expect(listBlobs(t).filter((key) => !key.startsWith('files/') && !key.startsWith('thumbnails/'))).toEqual([]);
    expect(listBlobs(t).some((key) => key.includes('passwd') || key.includes('..'))).toBe(false);
  });

  it('numbers a taken name before the extension, case-insensitively', async () => {
    const names: string[] = [];
    for (const name of ['report.pdf', 'report.pdf', 'REPORT.pdf', 'report.pdf']) names.push((await uploadOk(t, owner.auth, 'r', { name })).name);
    expect(names).toEqual(['report.pdf', 'report (1).pdf', 'REPORT (2).pdf', 'report (3).pdf']);
  });

  it('gives 30 concurrent uploads of one name, and 30 folders created with one name, distinct numbered names', async () => {
    // On PostgreSQL all chose the same next number, and half ran out of retries with 409.
    const numbered = (base: string, ext: string) => [`${base}${ext}`, ...Array.from({ length: 29 }, (_, i) => `${base} (${i + 1})${ext}`)].sort();
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => uploadOk(t, owner.auth, `same ${i}`, { name: 'same.txt' })));
    expect(results.map((f) => f.name).sort()).toEqual(numbered('same', '.txt'));
    const folders = await Promise.all(Array.from({ length: 30 }, () => t.http().post('/v1/folders').set(owner.auth).send({ name: 'Same' })));
    expect(folders.map((res) => res.status)).toEqual(Array(30).fill(201));
    expect(folders.map((res) => res.body.data.name).sort()).toEqual(numbered('Same', ''));
  });

  it('overwrites in place: same id and created_at, new content and modified_at, old bytes removed', async () => {
    const first = await uploadOk(t, owner.auth, 'version one', { name: 'draft.txt' });
    const blobsBefore = listBlobs(t, blobKeys.filePrefix(owner.accountId, first.id));
    const usedBefore = (await account(owner.accountId)).storageUsed;
    await sleep(5);
    const second = await uploadOk(t, owner.auth, 'version two, longer', { name: 'draft.txt', overwrite: true });
    expect(second.id).toBe(first.id);
    expect(second.name).toBe('draft.txt');
    expect(second.created_at).toBe(first.created_at);
    expect(second.modified_at > first.modified_at).toBe(true);
    expect(second.md5_hash).toBe(createHash('md5').update('version two, longer').digest('hex'));
    // The replaced bytes are deleted just after the answer.
    const blobsAfter = await eventually(async () => {
      const blobs = listBlobs(t, blobKeys.filePrefix(owner.accountId, first.id));
      return blobs.length === 1 && blobs;
    }, 20_000, 'the replaced blob to be deleted');
    expect(blobsAfter).toHaveLength(1);
    expect(blobsAfter[0]).not.toBe(blobsBefore[0]);
    expect((await account(owner.accountId)).storageUsed).toBe(usedBefore + 8);
    const download = await fetch(new URL(new URL(second.download_url).pathname + new URL(second.download_url).search, t.baseUrl));
    expect(await download.text()).toBe('version two, longer');
    // overwrite=false (or absent) keeps both.
    expect((await uploadOk(t, owner.auth, 'three', { name: 'draft.txt', overwrite: false })).name).toBe('draft (1).txt');
    expect((await upload(t, owner.auth, 'x', { name: 'draft.txt', overwrite: 'maybe' as never })).status).toBe(400);
  });

  it('uploads into a folder, and answers 404 for a folder that does not exist or is not the account\'s', async () => {
    const folder = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'Inbox' })).body.data;
    const file = await uploadOk(t, owner.auth, 'in a folder', { name: 'a.txt', folderId: folder.id });
    expect(file.folder_id).toBe(folder.id);
    const missing = await upload(t, owner.auth, 'x', { folderId: 'fld_doesnotexist' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    const other = await createAccount(t.app);
    const foreign = await upload(t, other.auth, 'x', { folderId: folder.id });
    expect(foreign.status).toBe(404);
    await expectNothingHeld(other.accountId);
  });

  it('needs the write scope', async () => {
    const reader = await createKey(t.app, owner, ['read', 'delete', 'share'], true);
    const res = await upload(t, reader.auth, 'x');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('permission_denied');
    expect((await upload(t, {}, 'x')).status).toBe(401);
  });

  describe('quota', () => {
    it('accepts an upload that exactly fills the quota and refuses one byte more with storage_exceeded', async () => {
      const small = await createAccount(t.app, { storageLimit: 1000 });
      await uploadOk(t, small.auth, Buffer.alloc(600), { name: 'a.bin' });
      const refused = await upload(t, small.auth, Buffer.alloc(401), { name: 'b.bin' });
      expect(refused.status).toBe(413);
      expect(refused.body.error).toEqual({
        code: 'storage_exceeded',
        message: expect.any(String),
        details: { current_usage: 600, storage_limit: 1000, required_space: 401 },
      });
      expect(await events(small.accountId, 'user.quota_exceeded')).toEqual([{ storage: { used: 600, limit: 1000, overage: 1 }, action_required: true }]);
      await expectNothingHeld(small.accountId);
      await uploadOk(t, small.auth, Buffer.alloc(400), { name: 'c.bin' });
      expect((await account(small.accountId)).storageUsed).toBe(1000);
    });

    it('never lets concurrent uploads overshoot a small quota', async () => {
      const small = await createAccount(t.app, { storageLimit: 1_000_000 });
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => upload(t, small.auth, Buffer.alloc(300_000, i), { name: `c${i}.bin` })));
      const ok = results.filter((r) => r.status === 200);
      expect(ok).toHaveLength(3);
      expect(results.filter((r) => r.status === 413).every((r) => r.body.error.code === 'storage_exceeded')).toBe(true);
      const state = await account(small.accountId);
      expect(state.storageUsed).toBe(900_000);
      await expectNothingHeld(small.accountId);
      expect(listBlobs(t, `files/${small.accountId}`)).toHaveLength(3);
    });

    it('lets an overwrite at full quota through when its net change fits, and refuses one that grows past it', async () => {
      const full = await createAccount(t.app, { storageLimit: 1000 });
      const original = await uploadOk(t, full.auth, Buffer.alloc(1000, 1), { name: 'report.bin' });

      const smaller = await uploadOk(t, full.auth, Buffer.alloc(600, 2), { name: 'report.bin', overwrite: true });
      expect(smaller.id).toBe(original.id);
      expect(smaller.size).toBe(600);
      expect((await account(full.accountId)).storageUsed).toBe(600);
      await uploadOk(t, full.auth, Buffer.alloc(400, 3), { name: 'other.bin' });

      const same = await uploadOk(t, full.auth, Buffer.alloc(600, 4), { name: 'report.bin', overwrite: true });
      expect(same.md5_hash).toBe(createHash('md5').update(Buffer.alloc(600, 4)).digest('hex'));

      const larger = await upload(t, full.auth, Buffer.alloc(601, 5), { name: 'report.bin', overwrite: true });
      expect(larger.status).toBe(413);
      expect(larger.body.error.code).toBe('storage_exceeded');
      // Without overwrite the same name is a new file, which has no room.
      const copy = await upload(t, full.auth, Buffer.alloc(10), { name: 'report.bin' });
      expect(copy.status).toBe(413);
      await expectNothingHeld(full.accountId);
      const state = await account(full.accountId);
      expect(state.storageUsed).toBe(1000);
      const kept = await t.http().get(`/v1/files/${original.id}`).set(full.auth);
      expect(kept.body.data).toMatchObject({ size: 600, md5_hash: same.md5_hash });
    });

    it('announces storage.warning once per upward crossing of 80% and 90%', async () => {
      const small = await createAccount(t.app, { storageLimit: 1000 });
      await uploadOk(t, small.auth, Buffer.alloc(700), { name: 'a.bin' });
      expect(await events(small.accountId, 'storage.warning')).toEqual([]);
      const b = await uploadOk(t, small.auth, Buffer.alloc(110), { name: 'b.bin' });
      await uploadOk(t, small.auth, Buffer.alloc(10), { name: 'c.bin' });
      expect(await events(small.accountId, 'storage.warning')).toEqual([{ storage: { used: 810, limit: 1000, percentage: 81, threshold: '80%' } }]);
      await uploadOk(t, small.auth, Buffer.alloc(90), { name: 'd.bin' });
      expect((await events(small.accountId, 'storage.warning')).map((e) => e.storage.threshold)).toEqual(['80%', '90%']);
      // Dropping below and crossing again announces again.
      expect((await t.http().delete(`/v1/files/${b.id}?permanent=true`).set(small.auth)).status).toBe(200);
      expect((await account(small.accountId)).storageWarningLevel).toBe(80);
      await uploadOk(t, small.auth, Buffer.alloc(100), { name: 'e.bin' });
      expect((await events(small.accountId, 'storage.warning')).map((e) => e.storage.threshold)).toEqual(['80%', '90%', '90%']);
    });
  });

  describe('size limit', () => {
    it('refuses at once from Content-Length, before the body is sent', async () => {
      const free = await createAccount(t.app, { plan: 'free' });
      const declared = 200 * MiB;
      const res = await rawUpload(t, free.auth, { fileSize: declared, declaredLength: declared });
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('file_too_large');
      expect(res.body.error.details).toEqual({ file_size: declared, max_size: 100 * MiB, plan: 'free' });
      expect(res.sent).toBeLessThan(20 * MiB);
      await expectNothingHeld(free.accountId);
    });

    it('cuts off a chunked 100 MiB + 1 byte upload as soon as the limit is passed, and accepts exactly 100 MiB', async () => {
      const free = await createAccount(t.app, { plan: 'free' });
      const res = await rawUpload(t, free.auth, { fileSize: 100 * MiB + 1 });
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('file_too_large');
      expect(res.body.error.details.max_size).toBe(100 * MiB);
      expect(res.body.error.details.file_size).toBeGreaterThan(100 * MiB);
      await expectNothingHeld(free.accountId);
      expect((await account(free.accountId)).storageUsed).toBe(0);

      const exact = await rawUpload(t, free.auth, { fileSize: 100 * MiB });
      expect(exact.status).toBe(200);
      expect(exact.body.data.size).toBe(100 * MiB);
      expect((await account(free.accountId)).storageUsed).toBe(100 * MiB);
    });
  });

  it('leaves no bytes and no reserved quota behind when the client hangs up halfway', async () => {
    const quitter = await createAccount(t.app);
    const res = await rawUpload(t, quitter.auth, { fileSize: 20 * MiB, declaredLength: 20 * MiB + 300, abortAfter: 10 * MiB });
    // The client hung up as planned, mid-body: no answer was sent before it did.
    expect([res.outcome, res.sent]).toEqual(['aborted', 10 * MiB]);
    await expectNothingHeld(quitter.accountId);
    expect(listBlobs(t, `files/${quitter.accountId}`)).toEqual([]);
    expect((await account(quitter.accountId)).storageUsed).toBe(0);
    const list = await t.http().get('/v1/files').set(quitter.auth);
    expect(list.body.data).toEqual([]);
  });

  it('stores small uploads of every size around the 64 KiB read-at-once limit byte for byte, with their MD5', async () => {
    const sizes = [1, 16 * 1024 + 7, 64 * 1024 - 300, 64 * 1024, 64 * 1024 + 1, 300 * 1024];
    for (const size of sizes) {
      const content = randomBytes(size);
      const res = await upload(t, owner.auth, content, { filename: `sized-${size}.bin` });
      expect(res.status).toBe(200);
      expect([res.body.data.size, res.body.data.md5_hash]).toEqual([size, createHash('md5').update(content).digest('hex')]);
      const stored = Buffer.from(await (await fetch(onTestServer(t, res.body.data.download_url))).arrayBuffer());
      expect(stored.equals(content)).toBe(true);
    }
  });

  it('leaves nothing behind when the client hangs up in the middle of a small upload, and keeps serving', async () => {
    const quitter = await createAccount(t.app);
    // Half of the file's bytes sent, the body declared whole: the server reads a body it never gets in full.
    const res = await rawUpload(t, quitter.auth, { fileSize: 40 * 1024, declaredLength: 48 * 1024, abortAfter: 20 * 1024 });
    expect([res.outcome, res.sent]).toEqual(['aborted', 20 * 1024]);
    await expectNothingHeld(quitter.accountId);
    expect((await account(quitter.accountId)).storageUsed).toBe(0);
    expect((await t.http().get('/v1/files').set(quitter.auth)).body.data).toEqual([]);
    const next = await upload(t, quitter.auth, 'still here', { filename: 'after.txt' });
    expect([next.status, next.body.data.size]).toEqual([200, 10]);
  });

  it('gives back what a crashed upload held: its stale reservation and temporary bytes', async () => {
    const crashed = await createAccount(t.app);
    const ds = t.app.get(DataSource);
    const longAgo = new Date(Date.now() - 2 * 3600_000);
    await t.app.get(BlobStorage).write('tmp/upl_crashed', Readable.from([Buffer.alloc(500)]));
    await ds.getRepository(UploadReservationEntity).insert({ id: 'upl_crashed', accountId: crashed.accountId, bytes: 500, tempKey: 'tmp/upl_crashed', createdAt: longAgo, updatedAt: longAgo });
    await ds.getRepository(AccountEntity).update({ id: crashed.accountId }, { storageReserved: 500 });
    // A fresh reservation (an upload still streaming) is left alone.
    await ds.getRepository(UploadReservationEntity).insert({ id: 'upl_live', accountId: crashed.accountId, bytes: 0, tempKey: 'tmp/upl_live', createdAt: new Date(), updatedAt: new Date() });
    const swept = await t.app.get(UploadSweeper).sweep();
    expect(swept.reservations).toBe(1);
    expect((await account(crashed.accountId)).storageReserved).toBe(0);
    expect(listBlobs(t, 'tmp')).toEqual([]);
    expect(await ds.getRepository(UploadReservationEntity).findOneBy({ id: 'upl_live' })).not.toBeNull();
    await ds.getRepository(UploadReservationEntity).delete({ id: 'upl_live' });
  });

  it('finishes the move of an upload whose row committed just before its process died', async () => {
    const file = await uploadOk(t, owner.auth, 'committed but not moved', { name: 'half-done.txt' });
    const row = await t.app.get(DataSource).getRepository(FileEntity).findOneByOrFail({ id: file.id });
    const uploadId = row.blobKey.split('/').pop()!;
    // The state a crash between commit and move leaves: the row points at a final key, the bytes are still temporary.
    await t.app.get(BlobStorage).move(row.blobKey, `tmp/${uploadId}`);
    await t.app.get(UploadSweeper).sweep(-1000);
    expect(listBlobs(t, 'tmp')).toEqual([]);
    const download = await fetch(onTestServer(t, file.download_url));
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('committed but not moved');
  });

  it('finishes an overwrite whose process died after the commit: new bytes in place, replaced bytes gone', async () => {
    const file = await uploadOk(t, owner.auth, 'version one', { name: 'died-mid-overwrite.txt' });
    const ds = t.app.get(DataSource);
    const row = await ds.getRepository(FileEntity).findOneByOrFail({ id: file.id });
    const oldKey = row.blobKey;
    // The state a kill right after an overwrite's commit leaves: the row names the new version, whose
    // bytes are still temporary; the old version's blob is still there; the reservation names the
    // file and a process that no longer beats.
    const newKey = blobKeys.file(owner.accountId, file.id, 'upl_overwrite');
    await t.app.get(BlobStorage).write('tmp/upl_overwrite', Readable.from([Buffer.from('version two')]));
    await ds.getRepository(FileEntity).update({ id: file.id }, { blobKey: newKey, size: 'version two'.length });
    await ds.getRepository(UploadReservationEntity).insert({
      id: 'upl_overwrite',
      accountId: owner.accountId,
      bytes: 0,
      tempKey: 'tmp/upl_overwrite',
      createdAt: new Date(),
      updatedAt: new Date(),
      instanceId: 'srv_killed',
      fileId: file.id,
      obsoleteBlobKeys: JSON.stringify([oldKey]),
    });
    expect(await t.app.get(UploadSweeper).reclaimAbandonedReservations()).toBe(1);
    expect(await ds.getRepository(UploadReservationEntity).findOneBy({ id: 'upl_overwrite' })).toBeNull();
    expect(listBlobs(t, 'tmp')).toEqual([]);
    expect(listBlobs(t, blobKeys.filePrefix(owner.accountId, file.id))).toEqual([newKey]);
    const download = await fetch(onTestServer(t, (await t.http().get(`/v1/files/${file.id}`).set(owner.auth)).body.data.download_url));
    expect(await download.text()).toBe('version two');
  });

  it('leaves the reservations of live processes alone', async () => {
    const ds = t.app.get(DataSource);
    const now = new Date();
    await ds.getRepository(UploadReservationEntity).insert({ id: 'upl_streaming', accountId: owner.accountId, bytes: 0, tempKey: 'tmp/upl_streaming', createdAt: now, updatedAt: now, instanceId: t.app.get(ServerInstance).id });
    try {
      expect(await t.app.get(UploadSweeper).reclaimAbandonedReservations()).toBe(0);
      expect(await ds.getRepository(UploadReservationEntity).findOneBy({ id: 'upl_streaming' })).not.toBeNull();
    } finally {
      await ds.getRepository(UploadReservationEntity).delete({ id: 'upl_streaming' });
    }
  });

  it('queues the media work of each stored version through the outbox relay once the upload has committed, with the final blob in place', async () => {
    const thumbnails = t.app.get<Queue<MediaJobData>>(getQueueToken(QUEUES.thumbnails));
    const file = await uploadOk(t, owner.auth, await pngImage(32, 32), { name: 'stored.png' });
    const stored = await t.app.get(DataSource).getRepository(FileEntity).findOneByOrFail({ id: file.id });
    const job = await eventually(() => thumbnails.getJob(mediaJobId('thumbnail', stored.id, stored.blobKey)), 20_000, 'the thumbnail job');
    expect(job.data).toEqual({ fileId: file.id, accountId: owner.accountId, blobKey: stored.blobKey });
    expect(listBlobs(t)).toContain(stored.blobKey);
    // Without a scanner (as here) the scan verdict needs no job: it is recorded with the media row.
    expect((await scanSettled(t.app, file.id)).scanStatus).toBe('skipped');
    await uploadOk(t, owner.auth, await pngImage(48, 48), { name: 'stored.png', overwrite: true });
    const overwritten = await t.app.get(DataSource).getRepository(FileEntity).findOneByOrFail({ id: file.id });
    expect(overwritten.blobKey).not.toBe(stored.blobKey);
    await eventually(() => thumbnails.getJob(mediaJobId('thumbnail', overwritten.id, overwritten.blobKey)), 20_000, 'the thumbnail job of the new version');
  });

  it('records file.uploaded in the outbox with the file data', async () => {
    const file = await uploadOk(t, owner.auth, 'evented', { name: 'event.txt' });
    const uploaded = (await events(owner.accountId, 'file.uploaded')).find((e) => e.file.id === file.id);
    expect(uploaded).toEqual({
      file: { id: file.id, name: 'event.txt', size: 7, type: 'text/plain', folder_id: null, uploaded_by: owner.userId, created_at: file.created_at },
    });
  });
});
