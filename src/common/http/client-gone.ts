import type { Request, Response } from 'express';

/** Error codes Node gives a write or pipe to a connection the other side has closed. */
const CONNECTION_CLOSED_CODES = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ERR_STREAM_DESTROYED', 'ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/**
 * True when `error` only says that the client closed its connection (a download cut short, a
 * browser tab closed): routine for a file service, not a fault of ours. A closed-connection error
 * while the client is still connected (a storage backend hanging up) is a real error.
 */
export function isClientGone(error: unknown, request: Request, response: Response): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !CONNECTION_CLOSED_CODES.has(code)) return false;
  return response.destroyed || request.socket.destroyed;
}
