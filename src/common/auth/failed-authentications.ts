import { Inject, Injectable } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';
import { REDIS } from '../../infra/redis/redis.module.js';
import { ApiError } from '../errors/api-error.js';
import { RedisThrottlerStorage } from '../rate-limit/redis-throttler.storage.js';

/** Wrong API keys one client address may present in a minute before it is refused. */
export const MAX_FAILED_AUTHENTICATIONS_PER_MINUTE = 30;
const WINDOW_MS = 60_000;

export class TooManyFailedAuthentications extends ApiError {
  constructor(retryAfterSeconds: number) {
    super(
      429,
      'rate_limit_exceeded',
      `Too many requests with an invalid API key from this address; retry in ${retryAfterSeconds} s.`,
      { limit: MAX_FAILED_AUTHENTICATIONS_PER_MINUTE, retry_after: retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

/**
 * Counts failed authentications per client network in one-minute windows shared through Redis.
 * A client past the limit is refused before its key is looked up, so guessing keys costs no
 * database queries; each process remembers a refused client until the window ends, so valid
 * requests pay nothing extra. Like the request rate limit it fails open without Redis.
 */
@Injectable()
export class FailedAuthentications {
  private readonly counters: RedisThrottlerStorage;
  private readonly refusedUntil = new Map<string, number>();

  constructor(
    @Inject(REDIS) redis: Redis,
    private readonly config: AppConfig,
  ) {
    this.counters = new RedisThrottlerStorage(redis, config);
  }

  /** Whether any client is refused now (or was, until its entry is next checked): when none is, no address need be worked out. */
  get refusesAnyone(): boolean {
    return this.refusedUntil.size > 0;
  }

  /** Throws while this client is refused. */
  assertAllowed(client: string): void {
    const until = this.refusedUntil.get(client);
    if (until === undefined) return;
    const left = until - Date.now();
    if (left > 0) throw new TooManyFailedAuthentications(Math.ceil(left / 1000));
    this.refusedUntil.delete(client);
  }

  /** Counts a failure; the error to answer with is a 429 once the client is past the limit. */
  async record<E extends ApiError>(client: string, failure: E): Promise<E | TooManyFailedAuthentications> {
    if (!this.config.rateLimitsEnabled) return failure;
    const window = await this.counters.increment(`failed-auth:${client}`, WINDOW_MS, MAX_FAILED_AUTHENTICATIONS_PER_MINUTE);
    if (!window.isBlocked) return failure;
    this.forgetExpired();
    this.refusedUntil.set(client, window.resetAt * 1000);
    return new TooManyFailedAuthentications(window.timeToBlockExpire);
  }

  private forgetExpired(): void {
    const now = Date.now();
    for (const [client, until] of this.refusedUntil) if (until <= now) this.refusedUntil.delete(client);
  }
}
