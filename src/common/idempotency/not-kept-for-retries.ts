/** Refusals marked by `notKeptForRetries`. */
const NOT_KEPT = new WeakSet<object>();

/**
 * Marks a refusal that holds only until the account changes, such as a limit on how many of something it may hold:
 * like a 413 storage_exceeded, its answer is not kept for the Idempotency-Key (IdempotencyInterceptor), so the retry
 * with the same key acts once room is made instead of being replayed the refusal for a day. A file of its own, so the
 * command handlers that throw such refusals (loaded by the command line too) do not load the interceptor.
 */
export function notKeptForRetries<E extends Error>(error: E): E {
  NOT_KEPT.add(error);
  return error;
}

export function isNotKeptForRetries(error: unknown): boolean {
  return typeof error === 'object' && error !== null && NOT_KEPT.has(error);
}
