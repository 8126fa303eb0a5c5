/** Attempts per delivery series: at once, then 5 s after the first failure, then 25 s after the second. */
export const MAX_ATTEMPTS = 3;
export const RETRY_DELAYS_MS = [5_000, 25_000] as const;
/** The BullMQ backoff type whose delays are RETRY_DELAYS_MS. */
export const DELIVERY_BACKOFF = 'webhook-delivery';

/** Delay before the next attempt after `attemptsMade` failed attempts (1 or 2). */
export function retryDelayMs(attemptsMade: number): number {
  return RETRY_DELAYS_MS[Math.min(Math.max(attemptsMade, 1), RETRY_DELAYS_MS.length) - 1];
}

/** A webhook whose every delivery attempt has failed for this long is deactivated. */
export const FAILING_WEBHOOK_DISABLE_AFTER_MS = 24 * 3600 * 1000;
