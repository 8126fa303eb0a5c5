import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import type { Response } from 'express';
import { map, Observable } from 'rxjs';
import { successEnvelope } from './envelope.js';

/** Wraps every JSON result in the success envelope; streamed bodies and hand-written responses pass untouched. */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const response = context.switchToHttp().getResponse<Response>();
    return next.handle().pipe(
      map((result) => {
        if (result instanceof StreamableFile || response.headersSent) return result;
        return successEnvelope(result);
      }),
    );
  }
}
