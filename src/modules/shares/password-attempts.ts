import { Inject, Injectable, Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { ApiError, ServiceUnavailable } from '../../common/errors/api-error.js';
import { AppConfig } from '../../config/app-config.js';
import { REDIS } from '../../infra/redis/redis.module.js';

/** Wrong passwords a client may try on one link before it is locked out. */
export const MAX_FAILED_PASSWORD_ATTEMPTS = 10;
/** The lockout window, counted from the first wrong password. */
export const PASSWORD_ATTEMPT_WINDOW_SECONDS = 15 * 60;

export class TooManyPasswordAttempts extends ApiError {
  constructor(retryAfterSeconds: number) {
    super(
      429,
      'rate_limit_exceeded',
      `Too many wrong passwords for this share link; retry in ${retryAfterSeconds} s.`,
      { limit: MAX_FAILED_PASSWORD_ATTEMPTS, window_seconds: PASSWORD_ATTEMPT_WINDOW_SECONDS, retry_after: retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

/**
 * Counts wrong passwords per (share link, client IP) in Redis, so every server process enforces one
 * limit. Once the limit is reached the client is refused even with the right password until the
 * window ends, so a password cannot be found by guessing. Unlike the request rate limit this fails
 * closed: without Redis a protected link answers 503 rather than allowing unlimited guesses.
 */
@Injectable()
export class PasswordAttempts {
  private readonly logger = new Logger('SharePasswordAttempts');

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly config: AppConfig,
  ) {}

  private key(shareId: string, clientIp: string): string {
    return `${this.config.redisKeyPrefix}:share-password-failures:${shareId}:${clientIp}`;
  }

  /** Throws TooManyPasswordAttempts while this client is locked out of this link. */
  async assertNotLockedOut(shareId: string, clientIp: string): Promise<void> {
    const key = this.key(shareId, clientIp);
    const [failures, ttl] = await this.guard(async () => {
      const results = await this.redis.multi().get(key).pttl(key).exec();
      return [Number(results?.[0]?.[1] ?? 0), Number(results?.[1]?.[1] ?? -2)] as const;
    });
    if (failures >= MAX_FAILED_PASSWORD_ATTEMPTS) throw new TooManyPasswordAttempts(retryAfter(ttl));
  }

  /** Counts one wrong password; the window starts with the first one. */
  async recordFailure(shareId: string, clientIp: string): Promise<void> {
    const key = this.key(shareId, clientIp);
    await this.guard(() => this.redis.multi().set(key, 0, 'PX', PASSWORD_ATTEMPT_WINDOW_SECONDS * 1000, 'NX').incr(key).exec());
  }

  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      this.logger.warn({ err: error }, 'Password attempt counter unavailable; refusing protected share access');
      throw new ServiceUnavailable('Password-protected share links are unavailable for a moment; retry shortly.');
    }
  }
}

function retryAfter(ttlMs: number): number {
  return ttlMs > 0 ? Math.max(1, Math.ceil(ttlMs / 1000)) : PASSWORD_ATTEMPT_WINDOW_SECONDS;
}
