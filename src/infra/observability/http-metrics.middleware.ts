import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { Metrics } from './metrics.js';

/** Times every HTTP request, labelled by route pattern (not the raw path, which would explode the label set). */
@Injectable()
export class HttpMetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: Metrics) {}

  use(request: Request, response: Response, next: NextFunction): void {
    const stop = this.metrics.httpRequestSeconds.startTimer();
    response.once('finish', () => {
      const pattern = (request.route as { path?: string } | undefined)?.path;
      const route = pattern ? `${request.baseUrl}${pattern}` : request.originalUrl.startsWith('/admin/queues') ? '/admin/queues' : 'unmatched';
      stop({ method: request.method, route, status_code: String(response.statusCode) });
    });
    next();
  }
}
