import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';
import { Reflector } from '@nestjs/core';
import { DECORATORS } from '@nestjs/swagger';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { ApiError } from '../errors/api-error.js';
import { mediaTypeOf } from './request-body.js';

export const JSON_MEDIA_TYPE = 'application/json';

/**
 * A body is read only in the media types its route states: `@ApiConsumes` (uploads: multipart/form-data; the share
 * form: a form or JSON), or JSON for any other route that reads one. A body sent as anything else (curl -d's form,
 * fetch's text/plain, curl -F's multipart, no Content-Type) is never parsed as meant: validation would report its text
 * as an unknown field or every field as missing, and the share form would silently drop its password. It is refused
 * with 415 saying which Content-Type to send, before anything reads it.
 */
@Injectable()
export class BodyMediaTypeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    const supported = hasBody(request) ? this.bodyMediaTypes(context) : null;
    if (supported && !supported.includes(mediaTypeOf(request.headers['content-type']))) {
      const sent = request.headers['content-type'] ? `was sent as ${mediaTypeOf(request.headers['content-type'])}` : 'has no Content-Type';
      const reads = supported.map((type) => (type === JSON_MEDIA_TYPE ? 'JSON' : type)).join(' or ');
      throw new ApiError(415, 'invalid_request', `This route reads ${/^[aeiou]/i.test(reads) ? 'an' : 'a'} ${reads} body, and this one ${sent}; send it with Content-Type: ${supported.join(' or ')}.`, {
        supported,
      });
    }
    return next.handle();
  }

  /** The media types this route reads a body in; null when it reads none. */
  private bodyMediaTypes(context: ExecutionContext): string[] | null {
    const handler = context.getHandler();
    const declared = this.reflector.get<string[] | undefined>(DECORATORS.API_CONSUMES, handler);
    if (declared) return declared;
    const parameters = Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), handler.name) as Record<string, unknown> | undefined;
    return Object.keys(parameters ?? {}).some((key) => key.split(':')[0] === String(RouteParamtypes.BODY)) ? [JSON_MEDIA_TYPE] : null;
  }
}

/** A request carrying body bytes: a positive Content-Length, or a chunked body. */
function hasBody(request: Request): boolean {
  return Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
}
