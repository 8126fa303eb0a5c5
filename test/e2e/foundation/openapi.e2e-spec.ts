import { getMetadataStorage } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata.js';
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

  it('states on every request field and query parameter the bounds its validation enforces (sizes, lengths, enums, required)', () => {
    const storage = getMetadataStorage();
    const documented = doc as unknown as { components: { schemas: Record<string, FieldSchema> }; paths: Record<string, Record<string, Operation>> };
    const problems: string[] = [];
    const targets = [...(storage as unknown as { validationMetadatas: Map<Function, ValidationMetadata[]> }).validationMetadatas.keys()];
    let compared = 0;
    for (const target of targets) {
      const rules = storage.getTargetValidationMetadatas(target, '', true, false);
      const properties = [...new Set(rules.map((rule) => rule.propertyName))];
      const byProperty = (name: string) => rules.filter((rule) => rule.propertyName === name);
      const schema = documented.components.schemas[target.name];
      if (schema) {
        // A request body: its schema carries the class's name.
        for (const name of properties) {
          const field = schema.properties?.[name];
          if (!field) continue;
          compared++;
          problems.push(...fieldProblems(`${target.name}.${name}`, byProperty(name), field, schema.required?.includes(name) ?? false));
        }
        continue;
      }
      // Query parameters: the operations whose query parameters are exactly the class's fields read it.
      for (const [path, methods] of Object.entries(documented.paths)) {
        for (const [method, operation] of Object.entries(methods)) {
          const query = new Map((operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => [p.name, p as QueryParameter & { required?: boolean }]));
          if (properties.length === 0 || query.size !== properties.length || !properties.every((name) => query.has(name))) continue;
          for (const name of properties) {
            compared++;
            const parameter = query.get(name)!;
            // A signed link without its expiry or signature is refused 403 like a wrong signature; a client must send both.
            const required = target.name === 'SignedUrlRequest' ? false : (parameter.required ?? false);
            problems.push(...fieldProblems(`${method.toUpperCase()} ${path} ?${name}`, byProperty(name), parameter.schema as FieldSchema, required));
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(40);
    expect(problems).toEqual([]);
  });

  it('documents the 1 to 255 characters of a file or folder name that the server enforces', async () => {
    const schemas = (doc as unknown as { components: { schemas: Record<string, FieldSchema> } }).components.schemas;
    for (const model of ['CreateFolderRequest', 'UpdateFolderRequest', 'UpdateFileRequest', 'UploadFileForm']) {
      expect(schemas[model].properties?.name, model).toMatchObject({ type: 'string', minLength: 1, maxLength: 255 });
    }
    const owner = await createAccount(t.app);
    const create = (name: string) => t.http().post('/v1/folders').set(owner.auth).send({ name });
    await create('x'.repeat(255)).expect(201);
    await create('x'.repeat(256)).expect(400);
    await create('').expect(400);
  });

  it('documents the body of a tus chunk in the media type the server reads, so a client generated from it can send one', async () => {
    type WithBody = Operation & { requestBody?: { required?: boolean; content: Record<string, { schema: { type?: string; format?: string } }> } };
    const patch = doc.paths['/v1/uploads/{id}'].patch as WithBody;
    const [mediaType] = Object.keys(patch.requestBody?.content ?? {});
    expect(patch.requestBody?.required).toBe(true);
    expect(patch.requestBody?.content[mediaType].schema).toEqual({ type: 'string', format: 'binary' });
    const owner = await createAccount(t.app);
    const tus = { ...owner.auth, 'Tus-Resumable': '1.0.0' };
    const created = await t.http().post('/v1/uploads').set({ ...tus, 'Upload-Length': '5', 'Upload-Metadata': `filename ${Buffer.from('chunk.txt').toString('base64')}` }).expect(201);
    const chunk = await t.http().patch(created.headers.location).set({ ...tus, 'Upload-Offset': '0', 'Content-Type': mediaType }).send(Buffer.from('hello'));
    expect(chunk.status).toBe(204);
    expect(chunk.headers['upload-offset']).toBe('5');
  });

  it('documents X-RateLimit headers only where they are sent: a tus chunk and the health check are not counted, and say so', async () => {
    type WithHeaders = Operation & { responses: Record<string, { description: string; headers?: Record<string, unknown> }> };
    const rateLimitHeaders = (op: WithHeaders) => Object.values(op.responses).flatMap((answer) => Object.keys(answer.headers ?? {})).filter((name) => name.startsWith('X-RateLimit'));
    const patch = doc.paths['/v1/uploads/{id}'].patch as WithHeaders;
    expect(rateLimitHeaders(patch)).toEqual([]);
    expect(patch.responses['429'].description).not.toContain("the plan's requests per minute are used up");
    expect(rateLimitHeaders(doc.paths['/health'].get as WithHeaders)).toEqual([]);
    // A counted route still documents them.
    expect(rateLimitHeaders(doc.paths['/v1/uploads'].post as WithHeaders)).toContain('X-RateLimit-Remaining');

    const owner = await createAccount(t.app);
    const tus = { ...owner.auth, 'Tus-Resumable': '1.0.0' };
    const created = await t.http().post('/v1/uploads').set({ ...tus, 'Upload-Length': '5', 'Upload-Metadata': `filename ${Buffer.from('uncounted.txt').toString('base64')}` }).expect(201);
    expect(created.headers['x-ratelimit-remaining']).toBeDefined();
    const chunk = await t.http().patch(created.headers.location).set({ ...tus, 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' }).send(Buffer.from('hello'));
    expect(chunk.status).toBe(204);
    expect(chunk.headers['x-ratelimit-remaining']).toBeUndefined();
    expect((await t.http().get('/health')).headers['x-ratelimit-remaining']).toBeUndefined();
  });

  it('serves Swagger UI at /docs', async () => {
    const res = await t.http().get('/docs').redirects(1);
    expect(res.status).toBe(200);
    expect(res.text).toContain('swagger-ui');
  });
});

interface FieldSchema {
  type?: string;
  enum?: unknown[];
  items?: FieldSchema;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  properties?: Record<string, FieldSchema>;
  required?: string[];
}

/** Where a field's class-validator rules and its documented schema disagree. */
function fieldProblems(where: string, rules: ValidationMetadata[], schema: FieldSchema, required: boolean): string[] {
  const problems: string[] = [];
  const expectEqual = (what: string, documented: unknown, enforced: unknown) => {
    if (JSON.stringify(documented) !== JSON.stringify(enforced)) problems.push(`${where}: ${what} is documented as ${JSON.stringify(documented)}, enforced as ${JSON.stringify(enforced)}`);
  };
  // IsOptional and ValidateIf (a nullable field) are both conditional validation.
  const optional = rules.some((rule) => rule.type === 'conditionalValidation');
  expectEqual('required', required, !optional);
  for (const rule of rules) {
    const [first, second] = (rule.constraints ?? []) as unknown[];
    const on = rule.each ? (schema.items ?? {}) : schema;
    switch (rule.name) {
      case 'arrayMinSize':
        expectEqual('minItems', schema.minItems, first);
        break;
      case 'arrayMaxSize':
        expectEqual('maxItems', schema.maxItems, first);
        break;
      case 'arrayUnique':
        expectEqual('uniqueItems', schema.uniqueItems, true);
        break;
      case 'min':
        expectEqual('minimum', on.minimum, first);
        break;
      case 'max':
        expectEqual('maximum', on.maximum, first);
        break;
      case 'minLength':
        expectEqual('minLength', on.minLength, first);
        break;
      case 'maxLength':
        expectEqual('maxLength', on.maxLength, first);
        break;
      case 'isLength':
        expectEqual('minLength', on.minLength, first);
        expectEqual('maxLength', on.maxLength, second);
        break;
      case 'isIn':
        expectEqual('enum', [...(on.enum ?? [])].filter((v) => v !== null).sort(), [...(first as unknown[])].sort());
        break;
      case 'isInt':
        expectEqual('type', on.type, 'integer');
        break;
      case 'isBoolean':
        expectEqual('type', on.type, 'boolean');
        break;
      case 'isArray':
        expectEqual('type', schema.type, 'array');
        break;
    }
  }
  return problems;
}
