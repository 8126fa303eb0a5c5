import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';

/**
 * Bad-input fuzzing generated from the OpenAPI document: for every operation, random and hostile
 * inputs that break the contract in at least one place. Every answer must be a documented 4xx
 * envelope within the time limit, and nothing in the database or on disk may change.
 */
interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  $ref?: string;
}
interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, unknown>;
}
interface FuzzInput {
  path: Record<string, string>;
  query: string;
  body: { kind: 'json'; value: unknown } | { kind: 'raw'; contentType: string; payload: string } | { kind: 'none' };
}

const RUNS_PER_OPERATION = Number(process.env.FUZZ_RUNS ?? 120);
const HOSTILE_STRINGS = [
  '../../etc/passwd',
  '..',
  '.',
  '/',
  '\\',
  'a\u0000b',
  '%00',
  '%2e%2e%2f',
  '',
  ' ',
  'null',
  '<script>alert(1)</script>',
  "'; DROP TABLE files; --",
  '𝕏'.repeat(300),
  'a'.repeat(5000),
  '\u202e\u0301',
  '{"$gt": ""}',
];

const hostileString = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.constantFrom(...HOSTILE_STRINGS));
const hostileNumber = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(-1, 0, 2 ** 53, -(2 ** 53), 1e308, -1e308, 10 ** 12));
const anyHostile = fc.oneof(hostileString, hostileNumber, fc.boolean(), fc.constant(null), fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }));

/** A value that cannot satisfy the schema's type. */
function wrongTypeFor(schema: Schema | undefined): fc.Arbitrary<unknown> {
  switch (schema?.type) {
    case 'string':
      return fc.oneof(hostileNumber, fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 }), fc.constant({}));
    case 'integer':
    case 'number':
      return fc.oneof(fc.constantFrom('abc', '', '1e999', 'NaN'), fc.boolean(), fc.constant({}), fc.constant([1, 2]));
    case 'boolean':
      return fc.oneof(fc.constantFrom('yes', 'no', '2', ''), hostileNumber, fc.constant({}));
    case 'array':
      return fc.oneof(hostileString, hostileNumber, fc.constant({}), fc.constant([]), fc.array(fc.constant({ nested: true }), { minLength: 1, maxLength: 2 }));
    default:
      return anyHostile;
  }
}

function resolveSchema(doc: { components: { schemas: Record<string, Schema> } }, schema: Schema | undefined): Schema | undefined {
  if (!schema?.$ref) return schema;
  return doc.components.schemas[schema.$ref.split('/').pop()!];
}

function jsonBodyArbitrary(schema: Schema | undefined): fc.Arbitrary<FuzzInput['body']> {
  const properties = Object.entries(schema?.properties ?? {});
  // Every body breaks the contract at least once: an unknown property, a wrong type, or no object at all.
  const unknownProperty = fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), anyHostile).map(([k, v]) => ({ [`x_${k}`]: v }));
  const brokenObject = fc
    .tuple(
      properties.length > 0 ? fc.subarray(properties, { minLength: 1 }) : fc.constant([] as [string, Schema][]),
      fc.boolean(),
      unknownProperty,
    )
    .chain(([chosen, addUnknown, extra]) =>
      fc
        .tuple(...chosen.map(([, s]) => wrongTypeFor(s)))
        .map((values) => ({ ...Object.fromEntries(chosen.map(([name], i) => [name, values[i]])), ...(addUnknown || chosen.length === 0 ? extra : {}) })),
    );
  const notAnObject = fc.oneof(fc.array(anyHostile, { maxLength: 3 }), hostileString, hostileNumber, fc.constant(null));
  const json = fc.oneof({ weight: 4, arbitrary: brokenObject }, { weight: 1, arbitrary: notAnObject }).map((value) => ({ kind: 'json' as const, value }));
  const raw = fc
    .tuple(
      fc.constantFrom('application/json', 'text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded'),
      fc.oneof(fc.constantFrom('{', '{"a":', '[1,2', '\u0000\u0001', 'x=1&x=2', '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc'), fc.string({ maxLength: 60 })),
    )
    .filter(([type, payload]) => !(type === 'application/json' && isValidJsonObjectlessPayload(payload)))
    .map(([contentType, payload]) => ({ kind: 'raw' as const, contentType, payload }));
  return fc.oneof({ weight: 3, arbitrary: json }, { weight: 1, arbitrary: raw });
}

/** A JSON text that parses to something other than an object still breaks the contract; only objects could be valid. */
function isValidJsonObjectlessPayload(payload: string): boolean {
  try {
    const parsed = JSON.parse(payload);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

function multipartArbitrary(): fc.Arbitrary<FuzzInput['body']> {
  const boundary = fc.constantFrom('b0undary', 'x', '----fuzz');
  return fc.oneof(
    // Broken multipart: missing terminator, wrong boundary, no file part, garbage.
    fc.tuple(boundary, fc.string({ maxLength: 80 })).map(([b, junk]) => ({ kind: 'raw' as const, contentType: `multipart/form-data; boundary=${b}`, payload: `--${b}\r\n${junk}` })),
    fc.tuple(boundary, hostileString).map(([b, value]) => ({
      kind: 'raw' as const,
      contentType: `multipart/form-data; boundary=${b}`,
      payload: `--${b}\r\nContent-Disposition: form-data; name="name"\r\n\r\n${value}\r\n--${b}--\r\n`,
    })),
    fc.constantFrom('application/json', 'text/plain', 'application/octet-stream').map((contentType) => ({ kind: 'raw' as const, contentType, payload: '{"file": "not a file"}' })),
    fc.constant({ kind: 'none' as const }),
  );
}

function queryArbitrary(parameters: Parameter[]): fc.Arbitrary<string> {
  const declared = parameters.filter((p) => p.in === 'query');
  const violation = fc.oneof(
    fc.string({ minLength: 1, maxLength: 10 }).map((k) => [[`zz_${k}`, 'x']]),
    ...(declared.length > 0
      ? [
          fc.constantFrom(...declared).map((p) => [[p.name, '1'], [p.name, '2']]),
          fc.tuple(fc.constantFrom(...declared), fc.constantFrom('-1', '0', '1e999', 'abc', '99999999999999999999', '', '%00', '../x')).map(([p, v]) =>
            p.schema?.type === 'string' && !p.schema.enum ? [[`zz_${p.name}`, v]] : [[p.name, v]],
          ),
        ]
      : []),
  );
  const noise = fc.array(fc.tuple(fc.constantFrom(...(declared.length ? declared.map((p) => p.name) : ['q'])), hostileString), { maxLength: 2 });
  return fc.tuple(violation, noise).map(([bad, extra]) =>
    [...bad, ...extra].map(([k, v]) => `${encodeURIComponent(String(k))}=${encodeURIComponent(String(v))}`).join('&'),
  );
}

describe('bad-input fuzzing from the OpenAPI document', () => {
  let t: TestApp;
  let owner: TestAccount;
  let doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMITS_ENABLED: 'false' });
    owner = await createAccount(t.app);
    doc = (await t.http().get('/docs-json').expect(200)).body;
  });
  afterAll(() => t.close());

  async function snapshot(): Promise<Record<string, unknown>> {
    const dataSource = t.app.get(DataSource);
    const counts: Record<string, unknown> = {};
    for (const table of dataSource.entityMetadatas.map((m) => m.tableName).sort()) {
      const [row] = await dataSource.query(`SELECT COUNT(*) AS n FROM "${table}"`);
      counts[table] = Number(row.n);
    }
    counts.accounts_storage = await dataSource.query('SELECT id, storage_used, storage_reserved FROM accounts ORDER BY id');
    counts.blob_files = countFiles(t.environment.env.STORAGE_DIR);
    return JSON.parse(JSON.stringify(counts));
  }

  it('answers every hostile input on every route with a documented 4xx envelope and changes nothing', async () => {
    const before = await snapshot();
    let inputs = 0;
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
    );
    expect(operations.length).toBeGreaterThan(3);
    for (const { path, method, operation } of operations) {
      // A HEAD answer has no body to carry an envelope (tus HEAD /v1/uploads/{id}).
      if (path === '/health' || path.startsWith('/docs') || method === 'head') continue;
      const parameters = operation.parameters ?? [];
      const pathParams = parameters.filter((p) => p.in === 'path');
      const content = operation.requestBody?.content ?? {};
      const body: fc.Arbitrary<FuzzInput['body']> = content['multipart/form-data']
        ? multipartArbitrary()
        : content['application/json']
          ? jsonBodyArbitrary(resolveSchema(doc, content['application/json'].schema))
          : fc.constant({ kind: 'none' as const });
      const pathValues = fc.record(Object.fromEntries(pathParams.map((p) => [p.name, hostileString.filter((s) => s.length > 0)])));
      const takesQuery = parameters.some((p) => p.in === 'query');
      const hasViolationElsewhere = pathParams.length > 0 || Object.keys(content).length > 0;
      // A route that takes no input at all has nothing to break (query strings there are ignored).
      if (!takesQuery && !hasViolationElsewhere) continue;
      const query = !takesQuery ? fc.constant('') : hasViolationElsewhere ? fc.oneof(fc.constant(''), queryArbitrary(parameters)) : queryArbitrary(parameters);
      const documented = Object.keys(operation.responses);

      await fc.assert(
        fc.asyncProperty(fc.record({ path: pathValues, query, body }), async (input: FuzzInput) => {
          inputs++;
          const url = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(input.path[name])) + (input.query ? `?${input.query}` : '');
          let req = t.http()[method as 'get'](url).set(owner.auth).timeout(5000);
          if (input.body.kind === 'json') req = req.set('Content-Type', 'application/json').send(JSON.stringify(input.body.value));
          if (input.body.kind === 'raw') req = req.set('Content-Type', input.body.contentType).send(input.body.payload);
          const res = await req;
          const where = `${method.toUpperCase()} ${url} ${JSON.stringify(input.body).slice(0, 200)} -> ${res.status} ${res.text.slice(0, 200)}`;
          expect(res.status, where).toBeGreaterThanOrEqual(400);
          expect(res.status, where).toBeLessThan(500);
          expect(documented, `undocumented status: ${where}`).toContain(String(res.status));
          expect(res.body.success, where).toBe(false);
          expect(typeof res.body.error?.code, where).toBe('string');
          expect(typeof res.body.error?.message, where).toBe('string');
        }),
        { numRuns: RUNS_PER_OPERATION, seed: Number(process.env.FUZZ_SEED ?? 20261122), endOnFailure: true },
      );
    }
    console.log(`fuzz: ${inputs} hostile inputs across ${operations.length} operations, every one answered with a documented 4xx envelope`);
    expect(await snapshot()).toEqual(before);
  }, 300_000);
});

function countFiles(dir: string | undefined): number {
  if (!dir) return 0;
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return 0;
  }
  return entries.reduce((n, name) => {
    const full = join(dir, name);
    return n + (statSync(full).isDirectory() ? countFiles(full) : 1);
  }, 0);
}
