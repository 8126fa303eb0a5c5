import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/test-app.js';

interface Operation {
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

  it('serves Swagger UI at /docs', async () => {
    const res = await t.http().get('/docs').redirects(1);
    expect(res.status).toBe(200);
    expect(res.text).toContain('swagger-ui');
  });
});
