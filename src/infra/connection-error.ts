/**
 * Why a connection (to the database, to Redis) failed, in a line; a connection refused on every address of a host
 * name (localhost: ::1 and 127.0.0.1) is an AggregateError without a message.
 */
export function describeConnectionError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const inner = error instanceof AggregateError ? error.errors.map(describeConnectionError).join('; ') : '';
  return error.message || inner || (error as NodeJS.ErrnoException).code || error.name;
}
