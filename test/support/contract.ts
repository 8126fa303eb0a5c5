import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import supertest from 'supertest';

/**
 * The contract test: every answer an end-to-end test receives from the service, through supertest
 * or fetch, is checked against the committed openapi.json (a drift test keeps that file equal to what
 * the code produces). An undocumented status, a body that does not match its schema (an undocumented
 * field included) or an undocumented API header fails the request, and with it the test.
 */

interface HeaderObject {
  required?: boolean;
  $ref?: string;
}
interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  content?: Record<string, { schema?: unknown }>;
}
interface Operation {
  operationId: string;
  responses: Record<string, ResponseObject>;
}
type Document = { paths: Record<string, Record<string, Operation>>; components: { headers?: Record<string, HeaderObject> } };

/** Headers the API itself defines: each must be documented on the answer that carries it. */
const API_HEADERS = /^(x-request-id|x-ratelimit-.*|retry-after|etag|last-modified|accept-ranges|location|www-authenticate|content-range|content-disposition|deprecation|sunset|idempotent-replayed)$/;

export interface ReceivedResponse {
  method: string;
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  contentType: string;
  /** The parsed JSON body, or undefined when the answer is not JSON. */
  body: unknown;
  /** True when the answer is known to have no body at all, whatever its Content-Type says (tus answers text/plain and nothing). */
  bodyEmpty?: boolean;
}

const document: Document = JSON.parse(readFileSync(fileURLToPath(new URL('../../openapi.json', import.meta.url)), 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
// Formats are checked too: every timestamp the document calls a date-time must be one (RFC 3339).
addFormats.default(ajv);
ajv.addSchema(closeObjects(rebase(document)) as object, 'openapi.json');
const validators = new Map<string, ValidateFunction>();

const routes = Object.entries(document.paths)
  .map(([template, methods]) => ({
    template,
    methods,
    pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    params: (template.match(/\{/g) ?? []).length,
  }))
  // A literal segment wins over a parameter: /v1/files/upload before /v1/files/{file_id}.
  .sort((a, b) => a.params - b.params);

/** The problems of one answer against the document; empty when it conforms or its route is not in the document. */
export function contractViolations(response: ReceivedResponse): string[] {
  const path = new URL(response.url, 'http://localhost').pathname;
  const route = routes.find((r) => r.pattern.test(path));
  const asked = response.method.toLowerCase();
  // HEAD is answered as GET unless the document has a HEAD operation of its own (tus: HEAD /v1/uploads/{id}).
  const method = asked === 'head' && !route?.methods.head ? 'get' : asked;
  const operation = route?.methods[method];
  if (!route || !operation) return [];
  // An answer a test's proxy made itself (a captive portal's page) is not the service's: the proxy says so in Via.
  if (response.headers.via !== undefined) return [];
  const where = `${response.method.toUpperCase()} ${path} → ${response.status} (${operation.operationId})`;
  const documented = operation.responses[String(response.status)] ?? operation.responses.default;
  if (!documented) return [`${where}: status ${response.status} is not documented`];

  const problems: string[] = [];
  const headers = Object.fromEntries(Object.entries(documented.headers ?? {}).map(([name, header]) => [name.toLowerCase(), resolveHeader(header)]));
  for (const name of Object.keys(response.headers)) {
    if (API_HEADERS.test(name.toLowerCase()) && !headers[name.toLowerCase()]) problems.push(`${where}: header ${name} is not documented`);
  }
  for (const [name, header] of Object.entries(headers)) {
    if (header.required && response.headers[name] === undefined) problems.push(`${where}: documented header ${name} is missing`);
  }

  const mediaType = response.contentType.split(';')[0].trim().toLowerCase();
  // A body of another type (a file's bytes, a page) must be one the answer documents, or a generated client cannot read it.
  const hasBody = response.method.toLowerCase() !== 'head' && response.status !== 204 && response.status !== 304 && mediaType !== '' && !response.bodyEmpty;
  if (hasBody && mediaType !== 'application/json' && !Object.keys(documented.content ?? {}).some((range) => mediaTypeMatches(range, mediaType))) {
    problems.push(`${where}: a ${mediaType} body is not documented (the answer documents ${Object.keys(documented.content ?? {}).join(', ') || 'no body'})`);
  }
  if (response.method.toLowerCase() !== 'head' && mediaType === 'application/json') {
    const schema = documented.content?.['application/json']?.schema;
    if (!schema) {
      problems.push(`${where}: a JSON body is not documented`);
    } else {
      const key = `${route.template} ${method} ${response.status}`;
      let validate = validators.get(key);
      if (!validate) {
        validate = ajv.compile(closeObjects(rebase(schema)) as object);
        validators.set(key, validate);
      }
      if (!validate(response.body)) {
        for (const error of validate.errors ?? []) {
          const extra = error.keyword === 'additionalProperties' ? ` (${(error.params as { additionalProperty: string }).additionalProperty})` : '';
          problems.push(`${where}: body${error.instancePath} ${error.message}${extra}`);
        }
      }
    }
  }
  return problems;
}

export class ContractViolation extends Error {
  constructor(problems: string[]) {
    super(`The answer breaks the OpenAPI contract (openapi.json):\n  ${problems.join('\n  ')}`);
    this.name = 'ContractViolation';
  }
}

// A media range (any type, image/ anything) or an exact type.
function mediaTypeMatches(range: string, mediaType: string): boolean {
  const [type, subtype] = range.split(';')[0].trim().toLowerCase().split('/');
  const [actualType, actualSubtype] = mediaType.split('/');
  return (type === '*' || type === actualType) && (subtype === '*' || subtype === actualSubtype);
}

function resolveHeader(header: HeaderObject): HeaderObject {
  if (!header.$ref) return header;
  return document.components.headers?.[header.$ref.split('/').pop() ?? ''] ?? header;
}

/** Points the document's local references at the schema registered as openapi.json. */
function rebase(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rebase);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `openapi.json${v}` : rebase(v)]));
}

/** An object schema that lists its properties allows no others here, so an undocumented field fails. */
function closeObjects(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(closeObjects);
  if (value === null || typeof value !== 'object') return value;
  const copy = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, closeObjects(v)])) as Record<string, unknown>;
  if (copy.type === 'object' && copy.properties && copy.additionalProperties === undefined) copy.additionalProperties = false;
  return copy;
}

// supertest: every request of every spec ends in Test.prototype.assert, which fails the request with the first error.
type SupertestResponse = { status: number; headers: Record<string, string>; body: unknown; text?: string; type?: string };
const Test = (supertest as unknown as { Test: { prototype: Record<string, unknown> } }).Test;
if (!Test.prototype.__contractChecked) {
  const assert = Test.prototype.assert as (this: { method: string; url: string }, error: unknown, res: SupertestResponse | undefined, fn: (err: unknown, res: unknown) => void) => void;
  Test.prototype.__contractChecked = true;
  Test.prototype.assert = function (this: { method: string; url: string }, error: unknown, res: SupertestResponse | undefined, fn: (err: unknown, res: unknown) => void) {
    if (res) {
      const problems = contractViolations({
        method: this.method,
        url: this.url,
        status: res.status,
        headers: res.headers,
        contentType: String(res.headers['content-type'] ?? ''),
        body: res.body,
        bodyEmpty: res.headers['content-length'] === '0' || res.text === '',
      });
      if (problems.length > 0) return fn(new ContractViolation(problems), res);
    }
    return assert.call(this, error, res, fn);
  };
}

// fetch: the answer is checked before the caller sees it.
const originalFetch = globalThis.fetch as typeof fetch & { __contractChecked?: boolean };
if (!originalFetch.__contractChecked) {
  const checkedFetch = async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]): Promise<Response> => {
    const response = await originalFetch(input, init);
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    const url = input instanceof Request ? input.url : String(input);
    const contentType = response.headers.get('content-type') ?? '';
    const isJson = contentType.split(';')[0].trim().toLowerCase() === 'application/json' && method.toUpperCase() !== 'HEAD';
    if (!isJson) {
      const answer: ReceivedResponse = { method, url, status: response.status, headers: Object.fromEntries(response.headers), contentType, body: undefined };
      const problems = contractViolations(answer);
      if (problems.length === 0) return response;
      // Only an answer that would fail is read, to tell a body of an undocumented type from an empty one.
      const bytes = Buffer.from(await response.arrayBuffer());
      if (bytes.length > 0 || contractViolations({ ...answer, bodyEmpty: true }).length > 0) throw new ContractViolation(problems);
      const copy = new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
      Object.defineProperty(copy, 'url', { value: response.url });
      return copy;
    }
    // Read whole and handed back as a new Response: a JSON answer is small, and a tee'd clone slows every request.
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const problems = contractViolations({ method, url, status: response.status, headers: Object.fromEntries(response.headers), contentType, body });
    if (problems.length > 0) throw new ContractViolation(problems);
    const copy = new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
    Object.defineProperty(copy, 'url', { value: response.url });
    return copy;
  };
  (checkedFetch as typeof originalFetch).__contractChecked = true;
  globalThis.fetch = checkedFetch as typeof fetch;
}
