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
      // baseUrl is the path of a mounted router (the queue dashboard's) as the client spelled it, and routing ignores
      // case: in lower case, as every mount path is written, so /ADMIN/QUEUES makes no series of its own.
      const route = pattern ? `${request.baseUrl.toLowerCase()}${pattern}` : request.originalUrl.startsWith('/admin/queues') ? '/admin/queues' : 'unmatched';
      stop({ method: request.method, route, status_code: String(response.statusCode) });
    });
    next();
  };
}
