import { type ArgumentsHost, Catch, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Clock } from '../../common/clock.js';
import { ApiExceptionFilter } from '../../common/http/api-exception.filter.js';
import { isClientGone } from '../../common/http/client-gone.js';
import { problemPage, sendSharePage, wantsSharePage } from './share-page.js';

/**
 * Refusals of a share route that its handler does not turn into a page itself, for a browser: the per-address rate
 * limit (a guard, before the handler), a form the validation pipe refuses, an unexpected failure. A browser gets the
 * share page with the same status and headers (Retry-After) instead of a JSON envelope; a program gets the envelope
 * as from every route.
 */
@Catch()
@Injectable()
export class SharePageRefusals extends ApiExceptionFilter {
  constructor(private readonly clock: Clock) {
    super();
  }

  override catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<Request>();
    const response = host.switchToHttp().getResponse<Response>();
    if (!wantsSharePage(request) || response.headersSent || isClientGone(exception, request, response)) return super.catch(exception, host);
    const { status, body, headers } = this.render(exception, request);
    if (body.success) return super.catch(exception, host);
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    response.vary('Accept');
    sendSharePage(response, status, problemPage(body.error, this.clock.now()));
  }
}
