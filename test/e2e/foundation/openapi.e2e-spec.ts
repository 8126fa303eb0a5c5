import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../support/accounts.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';

interface QueryParameter {
  name: string;
  in: string;
  schema: { type?: string; minimum?: number; maximum?: number; maxLength?: number; pattern?: string; enum?: unknown[] };
}

interface Operation {
  parameters?: QueryParameter[];
  security?: unknown[];
  responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>;
  'x-required-scope'?: string;
  'x-requires-elevated-key'?: boolean;
  'x-public'?: boolean;
}

describe('OpenAPI document and Swagger UI', () => {
  let t: TestApp;
  let doc: { paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, unknown> } };

  beforeAll(async () => {
    t = await startTestApp();
    doc = (await t.http().get('/docs-json').expect(200)).body;
  });
  afterAll(() => t.close());

  it('declares bearer authentication', () => {
    expect(doc.components.securitySchemes['api-key']).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('documents every /v1 route with its security, scope and the error envelope for 401, 403 and 429', () => {
    const operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/v1/'))
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));
    expect(operations.length).toBeGreaterThanOrEqual(4);
    for (const { path, method, op } of operations) {
      const where = `${method.toUpperCase()} ${path}`;
      if (op['x-public']) {
        // Public routes (signed links) need no key, and are still limited per client IP.
        expect(op.security, where).toBeUndefined();
        expect(op.responses['429'], `${where} 429`).toBeDefined();
        continue;
      }
      expect(op.security, where).toEqual([{ 'api-key': [] }]);
      expect(op['x-required-scope'], where).toBeDefined();
      for (const status of ['401', '403', '429']) {
        expect(op.responses[status]?.content?.['application/json']?.schema?.$ref, `${where} ${status}`).toBe(`#/components/schemas/ErrorEnvelope${status}`);
      }
      const success = Object.keys(op.responses).find((s) => s.startsWith('2'));
      expect(success, where).toBeDefined();
    }
  });

  it('states the decisions on scopes: /api-keys needs an elevated key, /user/info the read scope', () => {
    expect(doc.paths['/v1/api-keys'].post['x-requires-elevated-key']).toBe(true);
    expect(doc.paths['/v1/user/info'].get['x-required-scope']).toBe('read');
  });

  it('documents each query parameter of the listings with the bounds the server enforces', async () => {
    const owner = await createAccount(t.app);
    // An event, so that the event feed answers at once whatever `wait` says; a webhook, for its delivery log.
    await t.http().post('/v1/folders').set(owner.auth).send({ name: 'bounds' }).expect(201);
    const webhook = (await t.http().post('/v1/webhooks').set(owner.auth).send({ url: 'http://127.0.0.1:9/hook', events: ['file.uploaded'] }).expect(201)).body.data;
    const refused = async (path: string, name: string, value: string) => {
      const res = await t.http().get(`${path}?${new URLSearchParams({ [name]: value })}`).set(owner.auth);
      if (res.status !== 400) return false;
      return (res.body.error.details?.fields ?? []).some((problem: { field: string }) => problem.field === name);
    };
    const listings = Object.entries(doc.paths).filter(([path, methods]) => path.startsWith('/v1/') && !methods.get?.['x-public'] && methods.get?.parameters?.some((p) => p.in === 'query'));
    expect(listings.length).toBeGreaterThanOrEqual(8);
    for (const [template, methods] of listings) {
      const path = template.replace('{webhook_id}', webhook.id);
      for (const { name, schema } of methods.get.parameters!.filter((p) => p.in === 'query')) {
        const where = `GET ${template} ${name}`;
        if (schema.type === 'integer' || schema.type === 'number') {
          const minimum = schema.minimum ?? 0;
          expect(await refused(path, name, String(minimum)), `${where}=${minimum}`).toBe(false);
          if (schema.minimum !== undefined) expect(await refused(path, name, String(minimum - 1)), `${where}=${minimum - 1}`).toBe(true);
          if (schema.maximum !== undefined) {
            expect(await refused(path, name, String(schema.maximum)), `${where}=${schema.maximum}`).toBe(false);
            expect(await refused(path, name, String(schema.maximum + 1)), `${where}=${schema.maximum + 1}`).toBe(true);
          } else {
            expect(await refused(path, name, '999999999999'), `${where}=999999999999 (no maximum documented)`).toBe(false);
          }
          expect(await refused(path, name, `${minimum}.5`), `${where}=${minimum}.5 (type ${schema.type})`).toBe(schema.type === 'integer');
        } else if (schema.type === 'string' && !schema.enum) {
          // Only the length is tried here: a value of the documented length may still need the documented pattern or shape.
          const length = schema.maxLength ?? 1000;
          expect(await refused(path, name, 'x'.repeat(length + 1)), `${where} of ${length + 1} characters`).toBe(schema.maxLength !== undefined);
        }
      }
    }
  });

  it('serves Swagger UI at /docs', async () => {
    const res = await t.http().get('/docs').redirects(1);
    expect(res.status).toBe(200);
    expect(res.text).toContain('swagger-ui');
  });
});
