import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives a request its id, once: the caller's X-Request-Id when it is sane (so one id follows a request across
 * services), otherwise a new UUID; sent back as X-Request-Id. Runs as the first middleware, so even an answer
 * to a body that cannot be parsed carries it; the logger reads the same `req.id`.
 */
export function assignRequestId(req: IncomingMessage & { id?: unknown }, res: ServerResponse): string {
  if (typeof req.id === 'string') return req.id;
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
  req.id = id;
  res.setHeader('X-Request-Id', id);
  return id;
}

export function requestIdMiddleware(req: IncomingMessage, res: ServerResponse, next: () => void): void {
  assignRequestId(req, res);
  next();
}
