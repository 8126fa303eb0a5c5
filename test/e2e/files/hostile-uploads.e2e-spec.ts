import { gzipSync } from 'node:zlib';
import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { AccountEntity } from '../../../src/modules/accounts/account.entity.js';
import type { TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import { rawExchange } from '../../support/raw-http.js';
import type { TestApp } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { listBlobs, rawUpload } from '../../support/uploads.js';

const BOUNDARY = 'hostile-boundary';

/** One multipart part; `filename` null makes it a text field. */
function part(name: string, filename: string | null, content: string | Buffer, headers = ''): Buffer {
  const disposition = `form-data; name="${name}"${filename === null ? '' : `; filename="${filename}"`}`;
  return Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n${headers}\r\n`), Buffer.from(content), Buffer.from('\r\n')]);
}

function form(...parts: Buffer[]): Buffer {
  return Buffer.concat([...parts, Buffer.from(`--${BOUNDARY}--\r\n`)]);
}

/** What a client that writes its own multipart body sees: status and JSON answer. */
async function rawUploadOf(t: TestApp, owner: TestAccount, body: Buffer, headers = ''): Promise<{ status: number; body: any }> {
  const head =
    `POST /v1/files/upload HTTP/1.1\r\nHost: localhost\r\n${owner.auth.Authorization ? `Authorization: ${owner.auth.Authorization}\r\n` : ''}` +
    `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n${headers}\r\n`;
  const answer = await rawExchange(t.baseUrl, Buffer.concat([Buffer.from(head), body]));
  const status = Number(answer.slice(9, 12));
  const json = answer.slice(answer.indexOf('\r\n\r\n') + 4);
  return { status, body: JSON.parse(json) };
}

describe('uploads a hostile or unusual client sends', () => {
  let t: TestApp;
  let owner: TestAccount;
  useTestApp((started) => ({ t, owner } = started));

  const account = () => t.app.get(DataSource).getRepository(AccountEntity).findOneByOrFail({ id: owner.accountId });
  const fileCount = async () => (await t.http().get('/v1/files').set(owner.auth)).body.pagination.total_items as number;
  /** Nothing stored, charged or held: the same files and usage as before, no temporary bytes, no reserved quota. */
  const expectNothingChanged = async (before: { used: number; files: number }) => {
    await eventually(async () => listBlobs(t, 'tmp').length === 0 && (await account()).storageReserved === 0, 10_000, 'temporary bytes and reserved quota to be given back');
    expect({ used: (await account()).storageUsed, files: await fileCount() }).toEqual(before);
  };
  const snapshot = async () => ({ used: (await account()).storageUsed, files: await fileCount() });

  it('refuses a compressed upload (Content-Encoding gzip or br) with 415, rather than storing or misreading its bytes', async () => {
    const before = await snapshot();
    const body = form(part('file', 'notes.txt', 'plain words'));
    const gzipped = await rawUploadOf(t, owner, gzipSync(body), 'Content-Encoding: gzip\r\n');
    expect(gzipped.status).toBe(415);
    expect(gzipped.body.error).toEqual({ code: 'invalid_request', message: expect.stringContaining('Content-Encoding: gzip') });
    // Claimed compressed but sent plain: still not read, since a server that ignored the header would store what the client did not mean.
    const claimed = await rawUploadOf(t, owner, body, 'Content-Encoding: br\r\n');
    expect(claimed.status).toBe(415);
    await expectNothingChanged(before);

    const identity = await rawUploadOf(t, owner, body, 'Content-Encoding: identity\r\n');
    expect(identity.status).toBe(200);
    expect(identity.body.data).toMatchObject({ name: 'notes.txt', size: 11 });
  });

  it('refuses a form field in a charset it cannot read with 400 naming the field, instead of dropping the field', async () => {
    const before = await snapshot();
    const res = await rawUploadOf(t, owner, form(part('name', null, 'wanted.txt', 'Content-Type: text/plain; charset=x-unknown\r\n'), part('file', 'fallback.txt', 'abc')));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'name', message: expect.stringContaining('charset') }] } });
    // The same with the field after the file part, whose bytes are already stored by then.
    const after = await rawUploadOf(t, owner, form(part('file', 'fallback.txt', 'abc'), part('name', null, 'wanted.txt', 'Content-Type: text/plain; charset=x-unknown\r\n')));
    expect(after.status).toBe(400);
    expect(after.body.error.details.fields).toEqual([{ field: 'name', message: expect.stringContaining('charset') }]);
    await expectNothingChanged(before);

    // A charset it knows is decoded.
    const utf16 = await rawUploadOf(t, owner, form(part('name', null, Buffer.from('été.txt', 'utf16le'), 'Content-Type: text/plain; charset=utf-16le\r\n'), part('file', 'x.bin', 'abc')));
    expect(utf16.status).toBe(200);
    expect(utf16.body.data.name).toBe('été.txt');
  });

  it('refuses a form field given twice with 400 saying so, before or after the file part, and keeps nothing', async () => {
    const before = await snapshot();
    const twice = await rawUploadOf(t, owner, form(part('name', null, 'one.txt'), part('name', null, 'two.txt'), part('file', 'x.txt', 'abc')));
    expect(twice.status).toBe(400);
    expect(twice.body.error.details.fields).toEqual([{ field: 'name', message: 'must be given at most once' }]);
    const around = await rawUploadOf(t, owner, form(part('overwrite', null, 'true'), part('file', 'x.txt', 'abc'), part('overwrite', null, 'true')));
    expect(around.status).toBe(400);
    expect(around.body.error.details.fields).toEqual([{ field: 'overwrite', message: 'must be given at most once' }]);
    await expectNothingChanged(before);
  });

  it.each([['..'], ['.'], ['photos/'], ['photos/..'], ['C:\\photos\\.']])(
    'takes the name field for a file part whose filename %j is no name once its path is removed, and refuses it on name without one',
    async (filename) => {
      const before = await snapshot();
      const unnamed = await rawUploadOf(t, owner, form(part('file', filename, 'abc')));
      expect(unnamed.status).toBe(400);
      expect(unnamed.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'name' }] } });
      await expectNothingChanged(before);

      const named = await rawUploadOf(t, owner, form(part('name', null, `from-field-${filename.length}.txt`), part('file', filename, 'abc')));
      expect(named.status).toBe(200);
      expect(named.body.data).toMatchObject({ name: `from-field-${filename.length}.txt`, size: 3 });
      // The name field may as well follow the file part.
      const namedAfter = await rawUploadOf(t, owner, form(part('file', filename, 'abc'), part('name', null, `after-field-${filename.length}.txt`)));
      expect(namedAfter.status).toBe(200);
      expect(namedAfter.body.data.name).toBe(`after-field-${filename.length}.txt`);
    },
  );

  it('reads an RFC 5987 filename* before filename, and stores a part marked Content-Transfer-Encoding as sent', async () => {
    const disposition = `form-data; name="file"; filename="fallback.txt"; filename*=UTF-8''%E2%82%AC%20rates.txt`;
    const encoded = await rawUploadOf(t, owner, form(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n\r\nabc\r\n`)));
    expect(encoded.status).toBe(200);
    expect(encoded.body.data.name).toBe('€ rates.txt');

    const marked = await rawUploadOf(t, owner, form(part('file', 'marked.txt', 'aGVsbG8=', 'Content-Transfer-Encoding: base64\r\n')));
    expect(marked.status).toBe(200);
    const download = await fetch(`${t.baseUrl}${new URL(marked.body.data.download_url).pathname}${new URL(marked.body.data.download_url).search}`);
    expect(await download.text()).toBe('aGVsbG8=');
  });

  it('refuses a signed link with a parameter added to it, or one given twice, with 400 naming it', async () => {
    const stored = await rawUploadOf(t, owner, form(part('file', 'linked.txt', 'abc')));
    const link = new URL(stored.body.data.download_url);
    const at = (search: string) => fetch(`${t.baseUrl}${link.pathname}${search}`);
    expect((await at(link.search)).status).toBe(200);
    const tracked = await at(`${link.search}&utm_source=mail`);
    expect(tracked.status).toBe(400);
    expect(((await tracked.json()) as any).error.details.fields).toEqual([{ field: 'utm_source', message: 'is not allowed' }]);
    const twice = await at(`${link.search}&expires=${link.searchParams.get('expires')}`);
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as any).error.details.fields).toEqual([{ field: 'expires', message: 'must be given at most once' }]);
  });

  it('keeps only the last path component of a filename, whichever separator the client used', async () => {
    for (const [filename, name] of [
      ['../../etc/passwd', 'passwd'],
      ['C:\\Users\\me\\report.pdf', 'report.pdf'],
      ['dir/sub\\mixed.txt', 'mixed.txt'],
    ]) {
      const res = await rawUploadOf(t, owner, form(part('file', filename, 'abc')));
      expect(res.status).toBe(200);
      expect(res.body.data.name).toBe(name);
    }
  });

  describe('fields sent before the file part', () => {
    let quick: TestApp;
    let user: TestAccount;
    // A server still waiting for the body answers 408 once the client has been idle this long: a refusal that waits
    // for the whole file shows as 408, not as its own answer.
    useTestApp((started) => ({ t: quick, owner: user } = started), { env: { HTTP_IDLE_TIMEOUT_SECONDS: '2' } });

    it.each([
      ['a name that breaks the rules', [['name', 'a/b.txt']], 400, 'name'],
      ['an unknown field', [['colour', 'red']], 400, 'colour'],
      ['a bad overwrite', [['overwrite', 'yes']], 400, 'overwrite'],
      ['a folder that does not exist', [['folder_id', 'fld_missing']], 404, null],
    ] as Array<[string, Array<[string, string]>, number, string | null]>)(
      'refuses %s as soon as the file part begins, not after the client has sent the whole file',
      async (_label, fields, status, field) => {
        let hangUp = () => {};
        const res = await rawUpload(quick, user.auth, {
          fields,
          fileSize: 64 * 1024 * 1024,
          declaredLength: 64 * 1024 * 1024 + 1024,
          holdAfter: 1024 * 1024,
          onHold: (close) => (hangUp = close),
        });
        hangUp();
        expect(res.outcome).toBe('answered');
        expect(res.status).toBe(status);
        if (field) expect(res.body.error.details.fields).toEqual([expect.objectContaining({ field })]);
        await eventually(async () => listBlobs(quick, 'tmp').length === 0, 10_000, 'no temporary bytes');
      },
    );
  });
});
