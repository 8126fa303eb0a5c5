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
 * A route that reads a body and states no other media type (`@ApiConsumes`, as uploads and the share form do) reads
 * JSON only. A body sent to it as anything else (curl -d's form, fetch's text/plain, no Content-Type) is never parsed:
 * validation would then report the JSON text as an unknown field or every field as missing. It is refused with 415
 * saying which Content-Type to send, before anything reads it.
 */
@Injectable()
export class JsonBodyInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    if (hasBody(request) && mediaTypeOf(request.headers['content-type']) !== JSON_MEDIA_TYPE && this.readsOnlyJson(context)) {
      const sent = request.headers['content-type'] ? `was sent as ${mediaTypeOf(request.headers['content-type'])}` : 'has no Content-Type';
      throw new ApiError(415, 'invalid_request', `This route reads a JSON body, and this one ${sent}; send it with Content-Type: ${JSON_MEDIA_TYPE}.`, {
        supported: [JSON_MEDIA_TYPE],
      });
    }
    return next.handle();
  }

  private readsOnlyJson(context: ExecutionContext): boolean {
    const handler = context.getHandler();
    if (this.reflector.get<string[] | undefined>(DECORATORS.API_CONSUMES, handler)) return false;
    const parameters = Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), handler.name) as Record<string, unknown> | undefined;
    return Object.keys(parameters ?? {}).some((key) => key.split(':')[0] === String(RouteParamtypes.BODY));
  }
}

/** A request carrying body bytes: a positive Content-Length, or a chunked body. */
function hasBody(request: Request): boolean {
  return Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
}
