/**
 * The response headers a browser script may read (CORS `Access-Control-Expose-Headers`), on every route and on the
 * tus routes, whose answers @tus/server writes itself (it adds the protocol's own, TUS_RESPONSE_HEADERS there).
 */
export const EXPOSED_API_HEADERS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'X-Request-Id',
  'WWW-Authenticate',
  'ETag',
  'Content-Range',
  'Content-Disposition',
  'Idempotent-Replayed',
];
