import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { contractViolations, type ReceivedResponse } from '../../support/contract.js';
import { seedFile } from '../../support/files.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';

/** The contract check that every spec's requests pass through refuses what the document does not say. */
describe('the OpenAPI contract check', () => {
  let t: TestApp;
  let owner: TestAccount;
  let listing: ReceivedResponse;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createAccount(t.app);
    const res = await t.http().get('/v1/files').set(owner.auth).expect(200);
    listing = { method: 'GET', url: '/v1/files', status: res.status, headers: res.headers, contentType: res.headers['content-type'], body: res.body };
  });
  afterAll(() => t.close());

  it('accepts a real answer as the service sends it', () => {
    expect(contractViolations(listing)).toEqual([]);
  });

  it('refuses an undocumented status, field or header, and a missing required field', () => {
    expect(contractViolations({ ...listing, status: 418 })).toEqual([expect.stringContaining('status 418 is not documented')]);
    const body = listing.body as { pagination: Record<string, unknown> };
    expect(contractViolations({ ...listing, body: { ...body, cursor: 'x' } })).toEqual([expect.stringContaining('must NOT have additional properties (cursor)')]);
    expect(contractViolations({ ...listing, body: { success: true, data: [] } })).toEqual([expect.stringContaining("must have required property 'pagination'")]);
    expect(contractViolations({ ...listing, headers: { ...listing.headers, location: '/v1/files/x' } })).toEqual([expect.stringContaining('header location is not documented')]);
  });

  it('refuses a timestamp that is not an RFC 3339 date-time, and a size or count that is not a whole number', async () => {
    const file = await seedFile(t.app, owner, { name: 'formats.txt' });
    const res = await t.http().get(`/v1/files/${file.id}`).set(owner.auth).expect(200);
    const answer: ReceivedResponse = { method: 'GET', url: `/v1/files/${file.id}`, status: 200, headers: res.headers, contentType: res.headers['content-type'], body: res.body };
    expect(contractViolations(answer)).toEqual([]);
    const data = res.body.data as Record<string, unknown>;
    expect(contractViolations({ ...answer, body: { ...res.body, data: { ...data, created_at: 'Sat, 28 Nov 2026 01:00:00 GMT' } } })).toEqual([expect.stringContaining('created_at must match format "date-time"')]);
    expect(contractViolations({ ...answer, body: { ...res.body, data: { ...data, size: 12.5 } } })).toEqual([expect.stringContaining('size must be integer')]);
    const pagination = (listing.body as { pagination: Record<string, unknown> }).pagination;
    expect(contractViolations({ ...listing, body: { ...(listing.body as object), pagination: { ...pagination, total_items: 0.5 } } })).toEqual([expect.stringContaining('total_items must be integer')]);
  });

  it('accepts a downloaded file\'s bytes in its own type, and refuses a body of a type its answer does not document', async () => {
    const file = await seedFile(t.app, owner, { name: 'bytes.txt' });
    const signed = new URL((await t.http().get(`/v1/files/${file.id}`).set(owner.auth).expect(200)).body.data.download_url);
    const link = `${t.baseUrl}${signed.pathname}${signed.search}`;
    const res = await fetch(link);
    expect(res.status).toBe(200);
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    const answer: ReceivedResponse = { method: 'GET', url: link, status: 200, headers: Object.fromEntries(res.headers), contentType: res.headers.get('content-type') ?? '', body: undefined };
    expect(contractViolations(answer)).toEqual([]);
    expect(contractViolations({ ...listing, contentType: 'text/html', body: undefined })).toEqual([expect.stringContaining('a text/html body is not documented')]);
  });

  it('checks a HEAD answer against the HEAD operation where the document has one, else against GET', () => {
    const head = { method: 'HEAD', status: 418, headers: {}, contentType: '', body: undefined };
    expect(contractViolations({ ...head, url: '/v1/uploads/upl_x' })).toEqual([expect.stringContaining('HEAD /v1/uploads/upl_x → 418 (')]);
    expect(contractViolations({ ...head, url: '/v1/files' })).toEqual([expect.stringContaining('status 418 is not documented')]);
  });

  it('gives every one of 40 renames racing for one name its own numbered name (409 stays documented, as a last resort)', async () => {
    const files = await Promise.all(Array.from({ length: 40 }, (_, i) => seedFile(t.app, owner, { name: `race ${i}.txt` })));
    const folders = await Promise.all(Array.from({ length: 40 }, async (_, i) => (await t.http().post('/v1/folders').set(owner.auth).send({ name: `Race ${i}` }).expect(201)).body.data));
    const rename = (path: string, body: object) => fetch(`${t.baseUrl}${path}`, { method: 'PATCH', headers: { ...owner.auth, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    // Each answer passes the contract-checked fetch, which throws on an undocumented status.
    const answers = await Promise.all([
      ...files.map((file) => rename(`/v1/files/${file.id}`, { name: 'race.txt' })),
      ...folders.map((folder: { id: string }) => rename(`/v1/folders/${folder.id}`, { name: 'Race' })),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual(Array(80).fill(200));
    const names = await Promise.all(answers.map(async (answer) => ((await answer.json()) as { data: { name: string } }).data.name));
    expect(new Set(names.slice(0, 40)).size).toBe(40);
    expect(new Set(names.slice(40)).size).toBe(40);
    expect(names).toContain('race (39).txt');
    expect(names).toContain('Race (39)');
  });

  it('refuses an error code its status does not document', async () => {
    const res = await t.http().get('/v1/files/file_missing').set(owner.auth).expect(404);
    const answer = { method: 'GET', url: '/v1/files/file_missing', status: 404, headers: res.headers, contentType: res.headers['content-type'], body: res.body };
    expect(contractViolations(answer)).toEqual([]);
    const wrong = { ...answer, body: { success: false, error: { code: 'conflict', message: 'x' } } };
    expect(contractViolations(wrong)).toEqual([expect.stringContaining('/error/code must be equal to one of the allowed values')]);
  });
});
