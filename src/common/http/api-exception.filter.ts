import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiError, ErrorCode } from '../errors/api-error.js';
import { isClientGone } from './client-gone.js';
import { isDatabaseContention } from '../../infra/database/transactions.js';
import { redactedUrl } from '../../infra/observability/request-logging.js';
import { MAX_JSON_BODY_BYTES, MAX_JSON_DEPTH, NOT_A_JSON_OBJECT } from './request-body.js';
import { IdempotentReplay } from '../idempotency/idempotency.interceptor.js';
import { ErrorEnvelope, SuccessEnvelope } from './envelope.js';

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'invalid_request',
  401: 'authentication_failed',
  403: 'permission_denied',
  404: 'not_found',
  405: 'invalid_request',
  406: 'invalid_request',
  409: 'conflict',
  411: 'invalid_request',
  413: 'invalid_request',
  415: 'invalid_request',
  422: 'invalid_request',
  429: 'rate_limit_exceeded',
  503: 'service_unavailable',
};

/** Turns anything thrown into the error envelope; unexpected errors are logged with the request id, never shown. */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('ApiExceptionFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    if (isClientGone(exception, request, response)) {
      this.logger.debug({ requestId: String(request.id ?? ''), method: request.method, path: request.path }, 'Client went away before the answer was complete');
      response.destroy();
      return;
    }
    const { status, body, headers } = this.render(exception, request);
    if (response.headersSent) {
      // A stream failed after its first bytes: the only honest signal left is to cut the connection.
      response.destroy();
      return;
    }
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    // A stored answer the route wrote itself (tus) goes out as its bytes were.
    if (exception instanceof IdempotentReplay && exception.raw !== undefined) return void response.status(status).end(exception.raw);
    response.status(status).json(body);
  }

  render(exception: unknown, request: Request): { status: number; body: ErrorEnvelope | SuccessEnvelope<unknown>; headers: Record<string, string> } {
    // A retried request's stored answer: thrown so it skips the handler, sent as it was first sent.
    if (exception instanceof IdempotentReplay) {
      return { status: exception.status, headers: exception.headers, body: exception.body as ErrorEnvelope | SuccessEnvelope<unknown> };
    }
    if (exception instanceof ApiError) {
      return {
        status: exception.status,
        headers: exception.headers,
        body: envelope(exception.code, exception.message, exception.details),
      };
    }
    // The Express adapter wraps body-parser's errors in an HttpException; the original says what went wrong.
    const bodyParserError = asBodyParserError(exception instanceof HttpException ? exception.cause : exception);
    if (bodyParserError) {
      return { status: bodyParserError.status, headers: {}, body: envelope('invalid_request', bodyParserError.message, bodyParserError.details) };
    }
    if (exception instanceof HttpException && exception.getStatus() < 500) {
      const status = exception.getStatus();
      const code = CODE_BY_STATUS[status] ?? 'invalid_request';
      return { status, headers: {}, body: envelope(code, describeHttpException(exception, request)) };
    }
    if (exception instanceof HttpException && exception.getStatus() === HttpStatus.SERVICE_UNAVAILABLE) {
      // Terminus reports a failed health check this way; its per-dependency report is the useful part.
      const report = exception.getResponse() as { details?: Record<string, unknown> };
      return {
        status: HttpStatus.SERVICE_UNAVAILABLE,
        headers: { 'Retry-After': '5' },
        body: envelope('service_unavailable', 'A dependency of the service is unavailable.', report.details ?? {}),
      };
    }
    if (isDatabaseContention(exception)) {
      // A busy database is a moment's wait for the client, not a fault.
      this.logger.warn({ err: exception, method: request.method, url: redactedUrl(request.originalUrl) }, 'Database busy');
      return {
        status: HttpStatus.SERVICE_UNAVAILABLE,
        headers: { 'Retry-After': '1' },
        body: envelope('service_unavailable', 'The database is busy; retry in a moment.', { retry_after: 1 }),
      };
    }
    const requestId = String(request.id ?? '');
    this.logger.error({ err: exception, requestId, method: request.method, url: redactedUrl(request.originalUrl) }, 'Unhandled error');
    return {
      status: HttpStatus.INTERNAL_SERVER_ERROR,
      headers: {},
      body: envelope('internal_error', `An unexpected error occurred. Quote request id ${requestId} when reporting it.`, {
        request_id: requestId,
      }),
    };
  }
}

function envelope(code: ErrorCode, message: string, details?: Record<string, unknown>): ErrorEnvelope {
  return { success: false, error: details ? { code, message, details } : { code, message } };
}

function describeHttpException(exception: HttpException, request: Request): string {
  const status = exception.getStatus();
  if (status === 404) return `No route ${request.method} ${request.path}.`;
  const response = exception.getResponse();
  if (typeof response === 'object' && response !== null && 'message' in response) {
    const message = (response as { message: unknown }).message;
    if (Array.isArray(message)) return message.join('; ');
    if (typeof message === 'string') return message;
  }
  return exception.message;
}

function isJson(text: unknown): boolean {
  if (typeof text !== 'string') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Errors raised by body-parser (malformed JSON, body too large, bad charset) carry a 4xx `status` and a `type`. */
function asBodyParserError(exception: unknown): { status: number; message: string; details?: Record<string, unknown> } | null {
  if (typeof exception !== 'object' || exception === null) return null;
  const e = exception as { status?: unknown; type?: unknown; message?: unknown; errno?: unknown; body?: unknown };
  if (typeof e.status !== 'number' || e.status < 400 || e.status >= 500) return null;
  // A body that does not decompress as its Content-Encoding says: body-parser passes zlib's own error on, untyped.
  if (typeof e.type !== 'string') {
    return typeof e.errno === 'number' ? { status: 400, message: 'The request body could not be decompressed as its Content-Encoding says.' } : null;
  }
  const messages: Record<string, string> = {
    // The parser takes objects and lists only (strict): `null` or `"x"` is valid JSON, refused for what it is.
    'entity.parse.failed': isJson(e.body) ? NOT_A_JSON_OBJECT : 'The request body is not valid JSON.',
    'entity.too.large': `The request body is larger than ${MAX_JSON_BODY_BYTES} bytes.`,
    'entity.too.deep': `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`,
    // Thrown by jsonBodyParser with the charset in its message.
    'entity.encoding.invalid': e.message as string,
    'querystring.parse.rangeError': 'The form body nests deeper or holds more fields than allowed.',
    'encoding.unsupported': 'The request body encoding is not supported.',
    'charset.unsupported': 'The request body charset is not supported.',
    'request.aborted': 'The request was aborted.',
  };
  const details: Record<string, Record<string, unknown>> = {
    'entity.too.large': { max_bytes: MAX_JSON_BODY_BYTES },
    'entity.too.deep': { max_depth: MAX_JSON_DEPTH },
  };
  return { status: e.status, message: messages[e.type] ?? 'The request body could not be read.', details: details[e.type] };
}
