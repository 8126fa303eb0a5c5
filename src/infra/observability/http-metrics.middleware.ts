import type { NextFunction, Request, Response } from 'express';
import { Metrics } from './metrics.js';

/**
 * Times every HTTP request, labelled by route pattern (not the raw path, which would explode the label set).
 * Installed first of all (app.factory.ts), so requests refused before routing (a body that is not JSON or too
 * large, a path that cannot be decoded) are counted too, as `unmatched`.
 */
export function httpMetricsMiddleware(metrics: Metrics) {
  return (request: Request, response: Response, next: NextFunction): void => {
    const stop = metrics.httpRequestSeconds.startTimer();
    response.once('finish', () => {
      const pattern = (request.route as { path?: string } | undefined)?.path;
      const route = pattern ? `${request.baseUrl}${pattern}` : request.originalUrl.startsWith('/admin/queues') ? '/admin/queues' : 'unmatched';
      stop({ method: request.method, route, status_code: String(response.statusCode) });
    });
    next();
  };
}
