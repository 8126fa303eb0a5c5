import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../../src/common/auth/scopes.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { ContractViolation } from '../../support/contract.js';
import { seedFile } from '../../support/files.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';

interface Operation {
  operationId: string;
  parameters?: Array<{ name: string; in: string; required?: boolean }>;
  requestBody?: { content: Record<string, unknown> };
  security?: unknown[];
  responses: Record<string, unknown>;
  'x-required-scope'?: string;
  'x-requires-elevated-key'?: boolean;
}

const document: { paths: Record<string, Record<string, Operation>> } = JSON.parse(readFileSync(fileURLToPath(new URL('../../../openapi.json', import.meta.url)), 'utf8'));
const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
  Object.entries(methods)
    .filter(([, operation]) => typeof operation === 'object' && operation?.responses)
    .map(([method, operation]) => ({ path, method: method.toUpperCase(), operation, where: `${method.toUpperCase()} ${path} (${operation.operationId})` })),
);
const keyOperations = operations.filter(({ operation }) => operation.security);
const tus = (path: string) => path.startsWith('/v1/uploads');

/**
 * Every operation of openapi.json asked the questions any client can ask of it: without a key, with a key
 * that lacks the scope or elevation, for an id that does not exist, with a body in a type it does not read,
 * too large, or past the rate limit. Each answer goes through the contract-checked fetch (test/support/contract.ts),
 * so a status, body or header the document does not state is collected here, route by route, rather than
 * waiting for some feature's spec to meet it.
 */
describe('every operation of the OpenAPI document, answered as documented', () => {
  let t: TestApp;
  let owner: TestAccount;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createAccount(t.app);
    const file = await seedFile(t.app, owner, { name: 'sweep.txt' });
    const folder = (await t.http().post('/v1/folders').set(owner.auth).send({ name: 'sweep' }).expect(201)).body.data;
    const share = (await t.http().post('/v1/shares').set(owner.auth).send({ file_id: file.id }).expect(201)).body.data;
    const webhook = (await t.http().post('/v1/webhooks').set(owner.auth).send({ url: 'http://127.0.0.1:9/hook', events: ['file.uploaded'] }).expect(201)).body.data;
    const delivery = (await t.http().post(`/v1/webhooks/${webhook.id}/test`).set(owner.auth).expect(202)).body.data;
    Object.assign(ids, { file_id: file.id, folder_id: folder.id, share_id: share.id, token: share.url.split('/s/')[1], webhook_id: webhook.id, delivery_id: delivery.id });
  });
  afterAll(() => t.close());

  const url = (path: string, values: Record<string, string>) => t.baseUrl + path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? `zz_unknown_${name}`));
  /** The headers a tus request needs to get past the protocol's own checks to the question asked. */
  const tusHeaders = (path: string, method = ''): Record<string, string> => {
    if (!tus(path)) return {};
    if (method === 'PATCH') return { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' };
    if (method === 'POST' && path.includes('{id}')) return { 'Tus-Resumable': '1.0.0', 'X-HTTP-Method-Override': 'HEAD' };
    return { 'Tus-Resumable': '1.0.0' };
  };
  /** The smallest valid body of the operations that refuse an empty one before looking up their id. */
  const BODIES: Record<string, () => object> = { updateWebhook: () => ({ active: true }), replayWebhook: () => ({ since: new Date().toISOString() }) };
  const jsonBody = (operation: Operation): RequestInit & { headers?: Record<string, string> } => {
    const body = BODIES[operation.operationId];
    return body ? { body: JSON.stringify(body()), headers: { 'Content-Type': 'application/json' } } : {};
  };

  /** Sends one request; an answer that breaks the document comes back as its problems instead of throwing. */
  async function ask(where: string, target: string, init: RequestInit): Promise<{ status: number; headers: Headers; body: unknown } | { problems: string[] }> {
    try {
      const res = await fetch(target, init);
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: res.status, headers: res.headers, body };
    } catch (error) {
      if (error instanceof ContractViolation) return { problems: [`${where}: ${error.message}`] };
      throw error;
    }
  }

  /** Asks every operation in turn; collects each answer that breaks the document or is not the expected status. */
  async function sweep(selected: typeof operations, build: (op: (typeof operations)[number]) => { init: RequestInit; target?: string; expect: number[] } | null) {
    const failures: string[] = [];
    for (const op of selected) {
      const request = build(op);
      if (!request) continue;
      const answer = await ask(op.where, request.target ?? url(op.path, ids), request.init);
      if ('problems' in answer) failures.push(...answer.problems);
      else if (!request.expect.includes(answer.status)) failures.push(`${op.where}: ${answer.status} where ${request.expect.join(' or ')} was expected: ${JSON.stringify(answer.body).slice(0, 200)}`);
    }
    return failures;
  }

  it('answers every key route called without a key 401, with WWW-Authenticate', async () => {
    const failures = await sweep(keyOperations, ({ method, path }) => ({ init: { method, headers: tusHeaders(path, method) }, expect: [401] }));
    expect(failures).toEqual([]);
  });

  it('answers every key route called with a key that lacks its scope or elevation 403', async () => {
    const keys = new Map<string, Record<string, string>>();
    const keyWithout = async (scope: string | undefined, elevated: boolean) => {
      const scopes = SCOPES.filter((s) => s !== scope);
      const name = `${scopes.join(',')}:${elevated}`;
      if (!keys.has(name)) keys.set(name, (await createKey(t.app, owner, scopes, !elevated)).auth);
      return keys.get(name)!;
    };
    const failures: string[] = [];
    for (const op of keyOperations) {
      const scope = op.operation['x-required-scope'];
      const elevated = Boolean(op.operation['x-requires-elevated-key']);
      // A route that needs no particular scope and no elevation has nothing a key can lack.
      if (scope === 'any' && !elevated) continue;
      const auth = await keyWithout(scope === 'any' ? undefined : scope, elevated && scope === 'any');
      failures.push(...(await sweep([op], ({ method, path }) => ({ init: { method, headers: { ...auth, ...tusHeaders(path, method) } }, expect: [403] }))));
    }
    expect(failures).toEqual([]);
  });

  it('answers every route naming an id that does not exist 404, or the 410 of a tus upload that is gone', async () => {
    const withIds = operations.filter(({ path }) => path.includes('{'));
    const failures = await sweep(withIds, ({ method, path, operation }) => ({
      target: url(path, {}),
      init: { method, ...jsonBody(operation), headers: { ...(operation.security ? { ...owner.auth, ...tusHeaders(path, method) } : {}), ...jsonBody(operation).headers } },
      // A signed link without its signature is refused before the file is looked up.
      expect: path.startsWith('/v1/files/{file_id}/') && !operation.security ? [403] : tus(path) ? [404, 410] : [404],
    }));
    expect(failures).toEqual([]);
  });

  it('answers a body in a type the route does not read 415, and one over the size limit 413', async () => {
    // The bodies a parser reads (JSON, a form); multipart uploads and tus chunks are streamed as sent.
    const withBody = operations.filter(({ operation }) => ['application/json', 'application/x-www-form-urlencoded'].some((type) => operation.requestBody?.content[type]));
    const headers = (operation: Operation) => (operation.security ? owner.auth : {});
    const failures = [
      ...(await sweep(withBody, ({ method, operation }) => ({ init: { method, headers: { ...headers(operation), 'Content-Type': 'text/csv' }, body: 'name\nx' }, expect: [415] }))),
      ...(await sweep(withBody, ({ method, operation }) => ({
        init: { method, headers: { ...headers(operation), 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }) },
        expect: [413],
      }))),
    ];
    expect(failures).toEqual([]);
  });

  it('answers HEAD on every GET route as documented for the GET', async () => {
    const gets = operations.filter(({ method, path }) => method === 'GET' && path !== '/v1/events');
    // The fixtures' ids: each route names something that exists (a signed link without its signature is still refused).
    const failures = await sweep(gets, ({ path, operation }) => ({ init: { method: 'HEAD', headers: operation.security ? owner.auth : {} }, expect: path.startsWith('/v1/files/') && !operation.security ? [403] : [200] }));
    expect(failures).toEqual([]);
  });

  it('answers every key route 429 with Retry-After once the plan\'s requests of the minute are used up', async () => {
    // The window is a fixed minute: a sweep that a new minute overtakes is asked again, in the new one.
    let failures: string[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      const free = await createAccount(t.app, { plan: 'free' });
      let resetsAt = Infinity;
      for (;;) {
        const res = await fetch(`${t.baseUrl}/v1/user/info`, { headers: free.auth });
        if (res.status === 429) {
          resetsAt = Number(res.headers.get('x-ratelimit-reset')) * 1000;
          break;
        }
        expect(res.status).toBe(200);
      }
      failures = [];
      // A tus upload's chunks are not counted (docs/files.md), so the plan's largest file completes on every plan.
      for (const op of keyOperations.filter(({ operation }) => !['appendToUpload', 'overrideUploadMethod'].includes(operation.operationId))) {
        const answer = await ask(op.where, url(op.path, ids), { method: op.method, headers: { ...free.auth, ...tusHeaders(op.path, op.method) } });
        if ('problems' in answer) failures.push(...answer.problems);
        else if (answer.status !== 429) failures.push(`${op.where}: ${answer.status} where 429 was expected`);
        else if (!answer.headers.get('retry-after')) failures.push(`${op.where}: 429 without Retry-After`);
      }
      if (failures.length === 0 || Date.now() < resetsAt) break;
    }
    expect(failures).toEqual([]);
  });
});
