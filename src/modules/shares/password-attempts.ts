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

/** Takes one attempt if the client has attempts left: [count after taking (or -1 when locked out), ms left in the window]. */
const TAKE_ATTEMPT = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used >= tonumber(ARGV[1]) then return {-1, redis.call('PTTL', KEYS[1])} end
used = redis.call('INCR', KEYS[1])
if used == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {used, redis.call('PTTL', KEYS[1])}
`;

/** Gives an attempt back (the password was right), without resurrecting a window that has ended. */
const RETURN_ATTEMPT = `
if redis.call('EXISTS', KEYS[1]) == 1 and tonumber(redis.call('GET', KEYS[1])) > 0 then return redis.call('DECR', KEYS[1]) end
return 0
`;

/** Reads whether the client is locked out: [attempts used, ms left in the window]. */
const READ_ATTEMPTS = `return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1])}`;

/**
 * Limits password guesses per (share link, client IP) in Redis, so every server process enforces
 * one limit. An attempt is taken atomically before the password is checked and given back when it
 * was right, so even parallel guesses cannot exceed the limit. Once the limit is reached the client
 * is refused, even with the right password, until the window ends. Unlike the request rate limit
 * this fails closed: without Redis a protected link answers 503 rather than allowing unlimited guesses.
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

  /** Throws TooManyPasswordAttempts while this client is locked out of this link (uses no attempt). */
  async assertNotLockedOut(shareId: string, clientIp: string): Promise<void> {
    const [used, ttl] = await this.guard(() => this.redis.eval(READ_ATTEMPTS, 1, this.key(shareId, clientIp)) as Promise<[number, number]>);
    if (used >= MAX_FAILED_PASSWORD_ATTEMPTS) throw new TooManyPasswordAttempts(retryAfter(ttl));
  }

  /** Takes one attempt, or throws TooManyPasswordAttempts when none is left. */
  async take(shareId: string, clientIp: string): Promise<void> {
    const [used, ttl] = await this.guard(
      () => this.redis.eval(TAKE_ATTEMPT, 1, this.key(shareId, clientIp), MAX_FAILED_PASSWORD_ATTEMPTS, PASSWORD_ATTEMPT_WINDOW_SECONDS * 1000) as Promise<[number, number]>,
    );
    if (used < 0) throw new TooManyPasswordAttempts(retryAfter(ttl));
  }

  /** The attempt was the right password: it does not count against the client. */
  async giveBack(shareId: string, clientIp: string): Promise<void> {
    await this.guard(() => this.redis.eval(RETURN_ATTEMPT, 1, this.key(shareId, clientIp)));
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
