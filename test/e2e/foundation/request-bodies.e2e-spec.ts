import { deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { seedFile } from '../../support/files.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';

const nestedArrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const nestedObjects = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

describe('hostile JSON bodies, and repeated DELETEs', () => {
  let t: TestApp;
  let owner: TestAccount;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMITS_ENABLED: 'false' });
    owner = await createAccount(t.app);
  });
  afterAll(() => t.close());

  const postRaw = (path: string, body: string, method: 'post' | 'patch' = 'post') =>
    t.http()[method](path).set(owner.auth).set('Content-Type', 'application/json').send(body);

  it.each([
    ['a field nested 5,000 arrays deep', '/v1/files/bulk-delete', `{"file_ids": ${nestedArrays(5_000)}}`],
    ['a field nested 3,000 objects deep', '/v1/folders', `{"name": ${nestedObjects(3_000)}}`],
    ['a whole body nested 10,000 deep', '/v1/api-keys', `{"name": "k", "scopes": ["read"], "x": ${nestedArrays(10_000)}}`],
    ['a body that is itself 10,000 arrays deep', '/v1/shares', nestedArrays(10_000)],
  ])('refuses %s with 400 invalid_request before it is transformed', async (_label, path, body) => {
    const res = await postRaw(path, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      success: false,
      error: { code: 'invalid_request', message: expect.stringContaining('deeper than 32'), details: { max_depth: 32 } },
    });
  });

  it.each([
    ['a byte that starts no UTF-8 sequence', Buffer.from([0xff])],
    ['a sequence cut short', Buffer.from([0xe2, 0x82])],
    ['an encoded surrogate', Buffer.from([0xed, 0xa0, 0x80])],
  ])('refuses a JSON body that is not valid UTF-8 (%s) with 400, creating nothing, rather than storing U+FFFD', async (_label, bad) => {
    const body = Buffer.concat([Buffer.from('{"name": "invalid '), bad, Buffer.from(' utf-8"}')]);
    const res = await fetch(`${t.baseUrl}/v1/folders`, {
      method: 'POST',
      headers: { ...owner.auth, 'Content-Type': 'application/json', 'Content-Length': String(body.length) },
      body,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: unknown }).error).toEqual({ code: 'invalid_request', message: expect.stringContaining('UTF-8') });
    const folders = await t.http().get('/v1/folders?per_page=100&search=invalid').set(owner.auth).expect(200);
    expect(folders.body.data).toEqual([]);
  });

  it('counts brackets inside strings as text, not as nesting', async () => {
    const res = await postRaw('/v1/folders', JSON.stringify({ name: `${'['.repeat(100)}{` }));
    expect(res.status).toBe(201);
    expect(res.body.data.name).toBe(`${'['.repeat(100)}{`);
  });

  it.each([
    ["a form (curl -d's default Content-Type)", 'application/x-www-form-urlencoded'],
    ["text (fetch's default for a string body)", 'text/plain;charset=UTF-8'],
    ['no Content-Type at all', undefined],
    ['a JSON-like type the service does not read', 'application/vnd.api+json'],
  ])('refuses a JSON body sent as %s with 415 naming application/json, creating nothing', async (_label, contentType) => {
    const name = `typed ${contentType ?? 'none'}`;
    const body = JSON.stringify({ name });
    const headers: Record<string, string> = { ...owner.auth, 'Content-Length': String(Buffer.byteLength(body)), ...(contentType ? { 'Content-Type': contentType } : {}) };
    const res = await fetch(`${t.baseUrl}/v1/folders`, { method: 'POST', headers, body: Buffer.from(body) });
    expect(res.status).toBe(415);
    const answer = (await res.json()) as { error: unknown };
    expect(answer.error).toEqual({ code: 'invalid_request', message: expect.stringContaining('Content-Type: application/json'), details: { supported: ['application/json'] } });
    const folders = await t.http().get('/v1/folders?per_page=100').set(owner.auth).expect(200);
    expect(folders.body.data.map((f: { name: string }) => f.name)).not.toContain(name);
  });

  it('refuses an upload body that is not multipart with 415 naming multipart/form-data, instead of reading its text as fields', async () => {
    for (const [contentType, body] of [['application/json', '{"name": "x.txt"}'], ['application/x-www-form-urlencoded', 'hello\n']]) {
      const res = await t.http().post('/v1/files/upload').set(owner.auth).set('Content-Type', contentType).send(body);
      expect(res.status, contentType).toBe(415);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', details: { supported: ['multipart/form-data'] } });
    }
  });

  it('names malformed JSON as such', async () => {
    const res = await postRaw('/v1/folders', '{"name": ');
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ code: 'invalid_request', message: 'The request body is not valid JSON.' });
  });

  it('names a single JSON value (null, a string, a number, a boolean) where an object goes as such, not as invalid JSON', async () => {
    for (const body of ['null', '"listed-folder"', '42', 'true', ' null\n']) {
      const res = await postRaw('/v1/folders', body);
      expect(res.status, body).toBe(400);
      expect(res.body.error, body).toEqual({ code: 'invalid_request', message: 'The request body must be a JSON object.' });
    }
  });

  it('names a JSON list where an object goes as such, and creates nothing', async () => {
    const res = await postRaw('/v1/folders', JSON.stringify([{ name: 'listed-folder' }]));
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ code: 'invalid_request', message: 'The request body must be a JSON object.' });
    const folders = await t.http().get('/v1/folders?per_page=100').set(owner.auth).expect(200);
    expect(folders.body.data.map((f: { name: string }) => f.name)).not.toContain('listed-folder');
  });

  it('reads a gzip or deflate body, names one that does not decompress, and refuses an encoding it does not know with 415', async () => {
    const send = async (encoding: string, body: Buffer) => {
      const answer = await fetch(`${t.baseUrl}/v1/folders`, { method: 'POST', headers: { ...owner.auth, 'Content-Type': 'application/json', 'Content-Encoding': encoding }, body });
      return { status: answer.status, body: (await answer.json()) as any };
    };
    const gzipped = await send('gzip', gzipSync(JSON.stringify({ name: 'Sent gzipped' })));
    expect(gzipped.status).toBe(201);
    expect(gzipped.body.data.name).toBe('Sent gzipped');
    expect((await send('deflate', deflateSync(JSON.stringify({ name: 'Sent deflated' })))).status).toBe(201);
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const broken = await send(encoding, Buffer.from('{"name": "not compressed"}'));
      expect(broken.status).toBe(400);
      expect(broken.body.error).toEqual({ code: 'invalid_request', message: 'The request body could not be decompressed as its Content-Encoding says.' });
    }
    const unknown = await send('compress', Buffer.from('{}'));
    expect(unknown.status).toBe(415);
    expect(unknown.body.error).toMatchObject({ code: 'invalid_request', message: 'The request body encoding is not supported.' });
  });

  it.each([
    ['PATCH /v1/webhooks/{id} events', 'webhook', { events: null }, 'events'],
    ['PATCH /v1/webhooks/{id} active', 'webhook', { active: null }, 'active'],
    ['POST /v1/shares password', 'share', { password: null }, 'password'],
    ['POST /v1/shares expires_in', 'share', { expires_in: null }, 'expires_in'],
    ['POST /v1/api-keys elevated', 'key', { name: 'k', scopes: ['read'], elevated: null }, 'elevated'],
    ['PATCH /v1/files/{id} name', 'file', { name: null }, 'name'],
  ])('refuses null for %s, which is not nullable, with details.fields, and changes nothing', async (_label, target, body, field) => {
    const file = await seedFile(t.app, owner, { name: `null-${field}.txt` });
    const webhook = (await t.http().post('/v1/webhooks').set(owner.auth).send({ url: 'http://127.0.0.1:9/hook', events: ['file.uploaded'] }).expect(201)).body.data;
    const request = {
      webhook: () => t.http().patch(`/v1/webhooks/${webhook.id}`).send(body),
      share: () => t.http().post('/v1/shares').send({ file_id: file.id, ...body }),
      key: () => t.http().post('/v1/api-keys').send(body),
      file: () => t.http().patch(`/v1/files/${file.id}`).send(body),
    }[target as 'webhook' | 'share' | 'key' | 'file'];
    const keysBefore = (await t.http().get('/v1/api-keys').set(owner.auth).expect(200)).body.data.length;

    const res = await request().set(owner.auth);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details.fields).toEqual([{ field, message: 'must not be null' }]);

    const after = (await t.http().get(`/v1/webhooks/${webhook.id}`).set(owner.auth).expect(200)).body.data;
    expect(after).toMatchObject({ events: ['file.uploaded'], active: true });
    expect((await t.http().get(`/v1/shares?file_id=${file.id}`).set(owner.auth).expect(200)).body.data).toEqual([]);
    expect((await t.http().get('/v1/api-keys').set(owner.auth).expect(200)).body.data.length).toBe(keysBefore);
    expect((await t.http().get(`/v1/files/${file.id}`).set(owner.auth).expect(200)).body.data.name).toBe(`null-${field}.txt`);
    await t.http().delete(`/v1/webhooks/${webhook.id}`).set(owner.auth).expect(200);
  });

  it.each([
    ['a missing required field', '/v1/files/bulk-delete', {}, [{ field: 'file_ids', message: 'is required' }]],
    ['a field of the wrong type', '/v1/files/bulk-delete', { file_ids: 'file_1' }, [{ field: 'file_ids', message: 'must be an array' }]],
    ['items of the wrong type', '/v1/files/bulk-delete', { file_ids: [1, 2] }, [{ field: 'file_ids', message: 'each value in file_ids must be a string' }]],
    ['a number where a string goes', '/v1/folders', { name: 5 }, [{ field: 'name', message: 'must be a string' }]],
    [
      'two missing fields',
      '/v1/webhooks',
      {},
      [
        { field: 'url', message: 'is required' },
        { field: 'events', message: 'is required' },
      ],
    ],
  ])('names %s once, not with every rule of the value it would have had', async (_label, path, body, fields) => {
    const res = await t.http().post(path).set(owner.auth).send(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details.fields).toEqual(fields);
  });

  it('keeps null meaning "the root" where it is documented: moving a file or folder, creating a folder', async () => {
    const parent = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'parent', parent_id: null }).expect(201)).body.data;
    expect(parent.parent_id).toBeNull();
    const child = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'child', parent_id: parent.id }).expect(201)).body.data;
    const moved = await t.http().patch(`/v1/folders/${child.id}`).set(owner.auth).send({ parent_id: null }).expect(200);
    expect(moved.body.data.parent_id).toBeNull();
    const file = await seedFile(t.app, owner, { folderId: parent.id });
    const movedFile = await t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ folder_id: null }).expect(200);
    expect(movedFile.body.data.folder_id).toBeNull();
  });

  it('documents nullable: true in OpenAPI on exactly the request fields that accept null', async () => {
    const doc = (await t.http().get('/docs-json').expect(200)).body;
    const requestSchemas = new Set<string>();
    for (const methods of Object.values(doc.paths) as Array<Record<string, { requestBody?: { content: Record<string, { schema: { $ref?: string } }> } }>>) {
      for (const operation of Object.values(methods)) {
        for (const media of Object.values(operation.requestBody?.content ?? {})) if (media.schema.$ref) requestSchemas.add(media.schema.$ref.split('/').pop()!);
      }
    }
    const nullable = [...requestSchemas].flatMap((name) =>
      Object.entries(doc.components.schemas[name].properties ?? {})
        .filter(([, property]) => (property as { nullable?: boolean }).nullable)
        .map(([property]) => `${name}.${property}`),
    );
    expect(nullable.sort()).toEqual(['CreateFolderRequest.parent_id', 'UpdateFileRequest.folder_id', 'UpdateFolderRequest.parent_id']);
  });

  it('documents 413 for a JSON body over the size limit on every route that takes one', async () => {
    const doc = (await t.http().get('/docs-json').expect(200)).body;
    let checked = 0;
    for (const [path, methods] of Object.entries(doc.paths) as Array<[string, Record<string, { requestBody?: { content: object }; responses: object }>]>) {
      for (const [method, operation] of Object.entries(methods)) {
        if (!operation.requestBody || !('application/json' in operation.requestBody.content)) continue;
        expect(Object.keys(operation.responses), `${method} ${path}`).toContain('413');
        checked++;
      }
    }
    // The routes with a JSON body (folders, files, shares, webhooks, keys, ...): a renamed media type would check none.
    expect(checked).toBeGreaterThanOrEqual(10);
  });

  it('answers a repeated DELETE with 404 not_found, on every DELETE route', async () => {
    const file = await seedFile(t.app, owner);
    const trashedForGood = await seedFile(t.app, owner);
    const folder = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'to delete' }).expect(201)).body.data;
    const share = (await t.http().post('/v1/shares').set(owner.auth).send({ file_id: (await seedFile(t.app, owner)).id }).expect(201)).body.data;
    const webhook = (await t.http().post('/v1/webhooks').set(owner.auth).send({ url: 'http://127.0.0.1:9/hook', events: ['file.uploaded'] }).expect(201)).body.data;
    const key = await createKey(t.app, owner, ['read']);
    const routes = [
      `/v1/files/${file.id}`,
      `/v1/files/${trashedForGood.id}?permanent=true`,
      `/v1/folders/${folder.id}`,
      `/v1/shares/${share.id}`,
      `/v1/webhooks/${webhook.id}`,
      `/v1/api-keys/${key.id}`,
    ];
    for (const route of routes) {
      await t.http().delete(route).set(owner.auth).expect(200);
      const again = await t.http().delete(route).set(owner.auth);
      expect(again.status, route).toBe(404);
      expect(again.body, route).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) } });
    }
  });
});
