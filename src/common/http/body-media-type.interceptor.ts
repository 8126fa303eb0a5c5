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
 * A route reads the media types it states (`@ApiConsumes`: multipart/form-data for uploads, a form or JSON for the
 * share page's password form), or JSON when it reads a body and states none. A body sent as anything else (curl -d's
 * form, fetch's text/plain, JSON to the upload, no Content-Type) is never parsed: validation would then report the
 * text as an unknown field or every field as missing. It is refused with 415 saying which Content-Type to send,
 * before anything reads it.
 */
@Injectable()
export class BodyMediaTypeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    if (!hasBody(request)) return next.handle();
    const supported = this.supportedMediaTypes(context);
    const sentAs = mediaTypeOf(request.headers['content-type']);
    if (supported && !supported.includes(sentAs)) {
      const sent = request.headers['content-type'] ? `was sent as ${sentAs}` : 'has no Content-Type';
      const what = supported.length === 1 && supported[0] === JSON_MEDIA_TYPE ? 'a JSON body' : `a ${supported.join(' or ')} body`;
      throw new ApiError(415, 'invalid_request', `This route reads ${what}, and this one ${sent}; send it with Content-Type: ${supported.join(' or ')}.`, {
        supported,
      });
    }
    return next.handle();
  }

  /** The media types the route reads, or null when it reads no body. */
  private supportedMediaTypes(context: ExecutionContext): string[] | null {
    const handler = context.getHandler();
    const stated = this.reflector.get<string[] | undefined>(DECORATORS.API_CONSUMES, handler);
    if (stated) return stated;
    const parameters = Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), handler.name) as Record<string, unknown> | undefined;
    return Object.keys(parameters ?? {}).some((key) => key.split(':')[0] === String(RouteParamtypes.BODY)) ? [JSON_MEDIA_TYPE] : null;
  }
}

/** A request carrying body bytes: a positive Content-Length, or a chunked body. */
function hasBody(request: Request): boolean {
  return Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
}
