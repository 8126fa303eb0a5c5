import { applyDecorators, Type } from '@nestjs/common';
import { ApiExtraModels, ApiHeader, ApiProperty, ApiPropertyOptional, ApiResponse, ApiResponseSchemaHost, getSchemaPath, type OpenAPIObject } from '@nestjs/swagger';
import type { ErrorCode } from '../errors/api-error.js';
import { CursorPagination, Pagination } from './envelope.js';

type Schema = ApiResponseSchemaHost['schema'];

/** The interface version: the newest entry of CHANGELOG.md; the JavaScript client carries the same number. */
export const API_VERSION = '1.1.0';

export class FieldProblemDoc {
  @ApiProperty({ example: 'per_page' }) field: string;
  @ApiProperty({ example: 'must not be greater than 100' }) message: string;
}

export class ErrorBodyDoc {
  @ApiProperty({
    example: 'invalid_request',
    description:
      'invalid_request (400), authentication_failed (401), permission_denied (403), not_found (404), rate_limit_exceeded (429), ' +
      'file_too_large and storage_exceeded (413), share_expired and cursor_expired (410), password_required (401), file_infected (403), service_unavailable (503, with Retry-After), internal_error (500)',
  })
  code: string;

  @ApiProperty({ example: 'Request validation failed: per_page: must not be greater than 100' }) message: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Machine-readable specifics, e.g. `fields` (list of {field, message}) for validation failures.',
  })
  details?: Record<string, unknown>;
}

/** The failure envelope: `{success: false, error: {code, message, details?}}`. */
export class ErrorEnvelopeDoc {
  @ApiProperty({ example: false }) success: boolean;
  @ApiProperty({ type: ErrorBodyDoc }) error: ErrorBodyDoc;
}

/**
 * Documents a success answer as `{success: true, data: <model>}`, or a list with pagination (`list: true`;
 * `list: 'cursor'` for the listings that also answer `next_cursor`).
 */
export function ApiEnvelope(model: Type<unknown> | null, options: { status?: number; description?: string; list?: boolean | 'cursor' } = {}) {
  const pagination = options.list === 'cursor' ? CursorPagination : Pagination;
  const data: Schema = model === null ? { type: 'object' } : options.list ? { type: 'array', items: { $ref: getSchemaPath(model) } } : { $ref: getSchemaPath(model) };
  const properties: Record<string, Schema> = { success: { type: 'boolean', enum: [true] }, data };
  const required = ['success', 'data'];
  if (options.list) {
    properties.pagination = { $ref: getSchemaPath(pagination) };
    required.push('pagination');
  }
  return applyDecorators(
    ApiExtraModels(...([model, pagination].filter(Boolean) as Type<unknown>[])),
    ApiResponse({
      status: options.status ?? 200,
      description: options.description ?? 'Success',
      schema: { type: 'object', required, properties },
    }),
  );
}

/** Documents error answers of a route with the error envelope. */
export function ApiErrors(...answers: Array<[status: number, description: string]>) {
  return applyDecorators(...answers.map(([status, description]) => ApiResponse({ status, description, type: ErrorEnvelopeDoc })));
}

/** What any route that takes an API key answers 401 for (RequireScope documents it). */
export const KEY_FAILURES_401 = 'authentication_failed: missing, malformed, unknown or revoked API key.';

/**
 * The 401 of a creation refused because the calling key was revoked while the request waited (assertCallingKeyStillLive):
 * counted against the rate limit, so it carries the X-RateLimit headers. `created` says what was not created.
 */
export function ApiCallingKeyRevokedMeanwhile(created: string) {
  return ApiResponse({
    status: 401,
    description: `authentication_failed: the calling key was revoked while this request waited; no ${created} was created. Counted against the rate limit, this answer carries the X-RateLimit headers.`,
    type: ErrorEnvelopeDoc,
    headers: Object.fromEntries(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'].map((name) => [name, { $ref: `#/components/headers/${name}` }])),
  });
}

/** The error codes each status can carry; the document narrows every error answer's `code` to them. */
export const ERROR_CODES_BY_STATUS: Record<number, ErrorCode[]> = {
  400: ['invalid_request'],
  401: ['authentication_failed', 'password_required'],
  403: ['permission_denied', 'file_infected'],
  404: ['not_found'],
  409: ['conflict', 'idempotency_key_in_use'],
  410: ['share_expired', 'cursor_expired', 'not_found'],
  /** A download whose If-Match or If-Unmodified-Since names another version of the file; tus: a Tus-Resumable not spoken. */
  412: ['conflict', 'invalid_request'],
  413: ['file_too_large', 'storage_exceeded', 'invalid_request'],
  416: ['invalid_request'],
  422: ['idempotency_key_reused'],
  423: ['conflict'],
  429: ['rate_limit_exceeded'],
  /** tus: Checksum Mismatch (Upload-Checksum). */
  460: ['invalid_request'],
  500: ['internal_error'],
  503: ['service_unavailable'],
};

type HeaderObject = { description: string; required?: boolean; schema: { type: 'string' | 'integer' } };
type Reference = { $ref: string };
type ResponseObject = { description: string; headers?: Record<string, HeaderObject | Reference>; content?: Record<string, { schema?: Schema }> };
type OperationObject = { security?: unknown[]; requestBody?: unknown; parameters?: unknown[]; responses: Record<string, ResponseObject> };

const HEADERS: Record<string, HeaderObject> = {
  'X-Request-Id': {
    description: 'The request id (the caller\'s X-Request-Id when it is sane); quote it when reporting a problem.',
    schema: { type: 'string' },
  },
  'X-RateLimit-Limit': { description: 'Requests allowed in the current one-minute window (per account, or per client IP on public routes).', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'Unix time in seconds at which the window resets.', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before retrying.', required: true, schema: { type: 'integer' } },
  'Retry-After-When-Busy': { description: 'Seconds to wait before retrying, when the condition is passing (a busy database, Redis reconnecting).', schema: { type: 'integer' } },
  'Retry-After-When-In-Use': { description: 'Seconds to wait before retrying; sent with idempotency_key_in_use.', schema: { type: 'integer' } },
  'Idempotent-Replayed': { description: '`true` on an answer replayed for a retry with the same Idempotency-Key.', schema: { type: 'string' } },
  'WWW-Authenticate': { description: 'Bearer: the route takes an API key.', required: true, schema: { type: 'string' } },
  ETag: { description: 'The file\'s MD5 in quotes; send it back in If-None-Match (304) or If-Range.', required: true, schema: { type: 'string' } },
  'Last-Modified': {
    description: 'The file\'s modified_at to the second (an HTTP date). If-Range takes it back exactly as sent, once it is at least a second before the Date of the answer that gave it.',
    required: true,
    schema: { type: 'string' },
  },
  'Content-Disposition': { description: '`attachment` (or `inline` for thumbnails) with the file name, RFC 6266/5987 encoded.', required: true, schema: { type: 'string' } },
  'Accept-Ranges': { description: '`bytes`: a Range request is answered with that range (206).', required: true, schema: { type: 'string' } },
  'Content-Range': { description: '`bytes start-end/size` for a partial answer, `bytes */size` for an unsatisfiable range.', required: true, schema: { type: 'string' } },
};

const IDEMPOTENCY_KEY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the first complete answer (any status below 500 except 408, 409 conflict, 413, 423, 425 and 429, which ask for a retry later) is stored per API key and Idempotency-Key for 24 hours and replayed, with ' +
    '`Idempotent-Replayed: true`, for a retry of the same request. A request whose client went away (a timeout) is still finished and its ' +
    'answer stored, so the retry gets it rather than acting again. 1 to 255 printable ASCII characters, e.g. a UUID.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[ -~]+$' },
};
const IN_USE = 'idempotency_key_in_use: a request with this Idempotency-Key is still running; retry after Retry-After.';

/** Headers of an answer that streams a file's bytes: `@ApiResponse({ status: 200, headers: blobHeaders(200) })`. */
export function blobHeaders(status: 200 | 206 | 304): Record<string, Reference> {
  const names = status === 304 ? ['ETag', 'Last-Modified', 'Accept-Ranges'] : status === 206 ? ['ETag', 'Last-Modified', 'Accept-Ranges', 'Content-Disposition', 'Content-Range'] : ['ETag', 'Last-Modified', 'Accept-Ranges', 'Content-Disposition'];
  return Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));
}

/**
 * What a route that answers with sendBlob (infra/storage/blob-response.ts) takes and gives: Range, If-Range,
 * If-Match, If-Unmodified-Since, If-None-Match and If-Modified-Since, the whole file (200), a range (206), not modified (304), another
 * version than the one the client pinned (412) and an unsatisfiable range (416).
 */
export function ApiBlobAnswers(mediaType = '*/*') {
  // The bytes themselves, in the file's own type (a thumbnail: WebP), so a generated client reads the body as a file.
  const content = { [mediaType]: { schema: { type: 'string', format: 'binary' } } };
  return applyDecorators(
    ApiHeader({ name: 'Range', required: false, description: 'One byte range, e.g. bytes=0-1023 (206). Several ranges or another unit get the whole file.' }),
    ApiHeader({ name: 'If-Range', required: false, description: 'Send the range only if the file is still the version the client holds (RFC 9110); otherwise the whole file (200).' }),
    ApiHeader({ name: 'If-Match', required: false, description: 'The ETag of the version the client is reading (e.g. in several ranges): 412 once the file is another version.' }),
    ApiHeader({ name: 'If-Unmodified-Since', required: false, description: 'An HTTP date: 412 when the file was modified after it (to the second). Ignored with If-Match.' }),
    ApiHeader({ name: 'If-None-Match', required: false, description: 'The ETag the client holds: 304 while the file is unchanged.' }),
    ApiHeader({ name: 'If-Modified-Since', required: false, description: 'An HTTP date (the Last-Modified the client holds): 304 while the file was not modified after it (to the second). Ignored with If-None-Match, and when in the future.' }),
    ApiResponse({ status: 200, description: 'The file\'s bytes, with the file\'s own Content-Type.', headers: blobHeaders(200), content }),
    ApiResponse({ status: 206, description: 'The requested byte range.', headers: blobHeaders(206), content }),
    ApiResponse({ status: 304, description: 'Not modified (If-None-Match matched the ETag, or the file was not modified after If-Modified-Since).', headers: blobHeaders(304) }),
    ApiResponse({
      status: 412,
      description: 'conflict: the file is no longer the version If-Match or If-Unmodified-Since names; ETag gives the current one.',
      type: ErrorEnvelopeDoc,
      headers: Object.fromEntries(['ETag', 'Last-Modified', 'Accept-Ranges'].map((name) => [name, { $ref: `#/components/headers/${name}` }])),
    }),
    ApiErrors([416, 'invalid_request: the range is not satisfiable (it starts past the end of the file); Content-Range gives the size.']),
  );
}

/** Why a key route answers 429; on one not counted against the plan's minute (NotRateLimited), only the second reason. */
export const KEY_ROUTE_429 = "rate_limit_exceeded: the plan's requests per minute are used up, or this client address presented 30 invalid API keys this minute; see Retry-After.";
export const UNCOUNTED_KEY_ROUTE_429 =
  "rate_limit_exceeded: this client address presented 30 invalid API keys this minute (this route is not counted against the plan's requests per minute); see Retry-After.";

const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];

/**
 * What decorators cannot say once per route: every answer's common headers (request id, rate
 * limits, Retry-After), the error envelope narrowed to each status's codes, and the answers any
 * route can give (500, 503; 413 for a JSON body over the limit). Applied to the generated document.
 */
export function completeOpenApiDocument(document: OpenAPIObject): OpenAPIObject {
  const components = (document.components ??= {});
  components.headers = { ...components.headers, ...HEADERS };
  const schemas = (components.schemas ??= {});
  const header = (name: string): Reference => ({ $ref: `#/components/headers/${name}` });
  Object.values(schemas).forEach(allowNullInNullableEnums);
  for (const methods of Object.values(document.paths)) {
    for (const [method, operation] of Object.entries(methods as Record<string, OperationObject>)) {
      if (!operation || typeof operation !== 'object' || !('responses' in operation)) continue;
      const responses = operation.responses;
      // A POST standing for a tus PATCH, HEAD or DELETE (X-HTTP-Method-Override) is that request: no key (IdempotencyInterceptor).
      const overridesMethod = (operation.parameters ?? []).some((parameter) => (parameter as { name?: string }).name === 'X-HTTP-Method-Override');
      const idempotent = method === 'post' && Boolean(operation.security) && !overridesMethod;
      if (idempotent) {
        operation.parameters = [...(operation.parameters ?? []), IDEMPOTENCY_KEY_PARAMETER];
        responses['409'] = { description: [responses['409']?.description, IN_USE].filter(Boolean).join('\n\n') };
        responses['422'] ??= {
          description: 'idempotency_key_reused: the Idempotency-Key was used for a different request, or the answer kept for it can no longer be read (SECRETS_ENCRYPTION_KEY changed).',
        };
      }
      responses['500'] ??= { description: 'internal_error: an unexpected failure; details.request_id identifies it in the logs.' };
      responses['503'] ??= { description: 'service_unavailable: a dependency (database, Redis, the file store) is unavailable for a moment; see Retry-After.' };
      if (operation.requestBody && !responses['413']) responses['413'] = { description: 'invalid_request: the request body is too large.' };
      // A route's own 401 (a key revoked meanwhile) replaces a class-level RequireScope's: the key failures every key route has come first.
      if (operation.security && responses['401'] && !responses['401'].description.startsWith(KEY_FAILURES_401)) {
        responses['401'].description = `${KEY_FAILURES_401}\n\n${responses['401'].description}`;
      }
      // A route that answers a browser with a page, or that an HTML form posts to, answers its refusals as pages too.
      const requestTypes = Object.keys((operation.requestBody as { content?: object } | undefined)?.content ?? {});
      const pagesForBrowsers = Boolean(responses['200']?.content?.['text/html']) || requestTypes.includes('application/x-www-form-urlencoded');
      // Not counted against the plan's minute (NotRateLimited): no X-RateLimit headers, and a 429 only for invalid keys.
      const rateLimited = (operation as { 'x-rate-limited'?: boolean })['x-rate-limited'] !== false;
      if (!rateLimited && responses['429']) responses['429'].description = UNCOUNTED_KEY_ROUTE_429;
      for (const [status, response] of Object.entries(responses)) {
        const code = Number(status);
        const headers: Record<string, Reference> = { 'X-Request-Id': header('X-Request-Id') };
        // Authentication runs before the rate limit, so a 401 of a key route has not been counted.
        if (rateLimited && (code !== 401 || !operation.security)) for (const name of RATE_LIMIT_HEADERS) headers[name] = header(name);
        if (code === 429) headers['Retry-After'] = header('Retry-After');
        if (code === 503) headers['Retry-After'] = header('Retry-After-When-Busy');
        if (code === 409 && idempotent) headers['Retry-After'] = header('Retry-After-When-In-Use');
        if (idempotent && code < 500) headers['Idempotent-Replayed'] = header('Idempotent-Replayed');
        if (code === 401 && operation.security) headers['WWW-Authenticate'] = header('WWW-Authenticate');
        if (code === 416) Object.assign(headers, { ETag: header('ETag'), 'Last-Modified': header('Last-Modified'), 'Accept-Ranges': header('Accept-Ranges'), 'Content-Range': header('Content-Range') });
        response.headers = { ...headers, ...response.headers };
        if (code >= 400) {
          const name = `ErrorEnvelope${status}`;
          schemas[name] ??= errorEnvelopeSchema(ERROR_CODES_BY_STATUS[code] ?? ['invalid_request']);
          response.content = { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } };
          if (pagesForBrowsers) response.content['text/html'] = { schema: { type: 'string' } };
        }
      }
    }
  }
  return document;
}

/** OpenAPI 3.0: a nullable enum must list null among its values, or validators and generated clients reject null. */
function allowNullInNullableEnums(schema: unknown): void {
  if (Array.isArray(schema)) return schema.forEach(allowNullInNullableEnums);
  if (schema === null || typeof schema !== 'object') return;
  const node = schema as { nullable?: boolean; enum?: unknown[] };
  if (node.nullable && Array.isArray(node.enum) && !node.enum.includes(null)) node.enum = [...node.enum, null];
  Object.values(node).forEach(allowNullInNullableEnums);
}

function errorEnvelopeSchema(codes: ErrorCode[]): Schema {
  return {
    type: 'object',
    description: `The error envelope; \`code\` is one of ${codes.join(', ')}.`,
    required: ['success', 'error'],
    properties: {
      success: { type: 'boolean', enum: [false] },
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: { type: 'string', enum: codes },
          message: { type: 'string' },
          details: { type: 'object', additionalProperties: true, description: 'Machine-readable specifics, e.g. `fields` (list of {field, message}) for validation failures.' },
        },
      },
    },
  };
}

/** openapi.json's exact text: two-space JSON and a final newline, so regenerating an unchanged document changes no byte. */
export function serializeOpenApiDocument(document: OpenAPIObject): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
