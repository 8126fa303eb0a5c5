import type { OpenAPIObject } from '@nestjs/swagger';
import express, { type RequestHandler } from 'express';
import { InvalidRequest } from '../errors/api-error.js';

/** The largest JSON body any route accepts: a bulk delete of 1,000 ids needs about 40 KiB. */
export const MAX_JSON_BODY_BYTES = 100 * 1024;
/** The deepest nesting of arrays and objects a JSON body may have; no request of this API nests deeper than 3. */
export const MAX_JSON_DEPTH = 32;

/**
 * The media type a Content-Type header names, lower-cased and without its parameters: media types are
 * case-insensitive and may carry parameters (RFC 9110 8.3.1), so `Application/JSON; charset=utf-8` is `application/json`.
 */
export function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/** A body-parser error: the exception filter answers it 400 invalid_request, like malformed JSON. */
export class JsonTooDeep extends Error {
  readonly status = 400;
  readonly type = 'entity.too.deep';

  constructor() {
    super('The JSON body nests too deep.');
  }
}

/**
 * True when the JSON text opens more than `maxDepth` arrays or objects inside each other. One pass over the
 * characters, outside strings; the text need not be valid JSON (the parser judges that afterwards).
 */
export function nestsDeeperThan(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}

/** Every JSON body of this API is one object: a list, or a single value such as `null` or `"x"`, is refused with this. */
export const NOT_A_JSON_OBJECT = 'The request body must be a JSON object.';

/** A body-parser error: bytes that are not text in the body's charset, answered 400 rather than stored as U+FFFD. */
export class JsonNotInCharset extends Error {
  readonly status = 400;
  readonly type = 'entity.encoding.invalid';

  constructor(readonly charset: string) {
    super(`The request body is not valid ${charset}.`);
  }
}

/**
 * The one JSON body parser of the application. The depth is checked on the raw text, before parsing, so a
 * body nested thousands deep never reaches class-transformer or class-validator (both recurse and would
 * overflow the stack). Registered before Nest's default parser, which then stays out.
 * The text is decoded strictly: a name with a byte that is not UTF-8 would otherwise be stored with U+FFFD in its place.
 */
export function jsonBodyParser(): RequestHandler {
  return express.json({
    limit: MAX_JSON_BODY_BYTES,
    verify: (_req, _res, body, encoding) => {
      let decoder: InstanceType<typeof TextDecoder>;
      try {
        decoder = new TextDecoder(encoding || 'utf-8', { fatal: true });
      } catch {
        return; // an encoding the decoder does not know: the parser refuses it with its own 415
      }
      let text: string;
      try {
        text = decoder.decode(body);
      } catch {
        throw new JsonNotInCharset(decoder.encoding === 'utf-8' ? 'UTF-8' : decoder.encoding);
      }
      if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw new JsonTooDeep();
    },
  });
}

/**
 * Refuses (400, naming each) every query parameter and JSON body field sent to a route that takes none, where ignoring
 * them would act unlike what they ask: `DELETE /v1/trash {"file_ids": […]}` would empty the whole trash. No body, `{}`
 * and `[]` pass; any other body that is not an object is named `body`.
 */
export function refuseUnexpectedInput(query: Record<string, unknown>, body: unknown): void {
  const bodyFields = body === undefined || body === null ? [] : Array.isArray(body) ? (body.length === 0 ? [] : ['body']) : typeof body === 'object' ? Object.keys(body) : ['body'];
  const given = [...Object.keys(query), ...bodyFields];
  if (given.length > 0) throw InvalidRequest.fields(given.map((field) => ({ field, message: 'is not allowed' })));
}

/**
 * Every operation that takes a body may answer 415 (a media type it does not read, or a charset or encoding the service
 * cannot); one that takes a JSON body also 413 (body over the size limit).
 */
export function documentJsonBodyLimits(document: OpenAPIObject): void {
  for (const methods of Object.values(document.paths)) {
    for (const operation of Object.values(methods)) {
      const content = (operation as { requestBody?: { content?: Record<string, unknown> } })?.requestBody?.content;
      const responses = (operation as { responses?: Record<string, unknown> })?.responses;
      // A tus chunk (application/offset+octet-stream) is read as sent, by the protocol, never by a parser: no 413 or 415 here.
      if (!content || !responses || Object.keys(content).every((type) => type === 'application/offset+octet-stream')) continue;
      const envelope = { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelopeDoc' } } };
      // Answered by the body parser, before authentication and the rate limit: the request id is the only header.
      const headers = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };
      if (content['application/json']) responses['413'] ??= { description: `invalid_request: the JSON body is larger than ${MAX_JSON_BODY_BYTES / 1024} KiB.`, content: envelope, headers };
      responses['415'] ??= {
        description: `invalid_request: the body is in a charset or content encoding the service cannot read, or not sent as Content-Type: ${Object.keys(content).join(' or ')} (\`details.supported\`).`,
        content: envelope,
        // A media type the route does not read is refused after the rate limit, which then states its headers.
        headers: { ...headers, ...Object.fromEntries(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'].map((name) => [name, { $ref: `#/components/headers/${name}` }])) },
      };
    }
  }
}
