import { Logger } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';

/**
 * One command per request (MULTI, INCR, PEXPIRE and EXEC were four). The key outlives its window by a few
 * seconds: it names the window's start, and its expiry is set at the window's first request.
 */
const COUNT_IN_WINDOW = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return hits`;

export interface WindowRecord {
  totalHits: number;
  timeToExpire: number;
  isBlocked: boolean;
  timeToBlockExpire: number;
  /** Unix time in seconds at which the current window ends. */
  resetAt: number;
}

/**
 * Fixed-window counters in Redis, windows aligned to multiples of the ttl so every server process
 * agrees on the same window and the same reset time.
 */
export class RedisThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger('RateLimit');
  /** Since when the counters cannot be reached, and how many requests were let through uncounted meantime. */
  private outage: { since: number; uncounted: number } | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly config: AppConfig,
    /** What these counters count, as the log names them. */
    private readonly counting = 'Rate-limit counters',
  ) {}

  async increment(key: string, ttl: number, limit: number): Promise<WindowRecord> {
    const now = Date.now();
    const windowStart = Math.floor(now / ttl) * ttl;
    const windowEnd = windowStart + ttl;
    const secondsLeft = Math.max(1, Math.ceil((windowEnd - now) / 1000));
    const redisKey = `${this.config.redisKeyPrefix}:ratelimit:${key}:${windowStart}`;
    let totalHits: number;
    try {
      totalHits = Number(await this.redis.eval(COUNT_IN_WINDOW, 1, redisKey, String(ttl + 5000)));
      if (this.outage) this.recovered(this.outage);
    } catch (error) {
      // Fail open: an unreachable Redis must not take the API down with it.
      this.failedOpen(error);
      totalHits = 0;
    }
    const isBlocked = totalHits > limit;
    return {
      totalHits,
      timeToExpire: secondsLeft,
      isBlocked,
      timeToBlockExpire: isBlocked ? secondsLeft : 0,
      resetAt: Math.floor(windowEnd / 1000),
    };
  }

  /** Said once per outage, not on every request it lets through: at a thousand requests a second the log would drown. */
  private failedOpen(error: unknown): void {
    if (this.outage) {
      this.outage.uncounted++;
      return;
    }
    this.outage = { since: Date.now(), uncounted: 1 };
    this.logger.warn({ err: error }, `${this.counting} unavailable (Redis): requests are let through uncounted until it is back`);
  }

  private recovered(outage: { since: number; uncounted: number }): void {
    this.outage = null;
    const seconds = Math.round((Date.now() - outage.since) / 1000);
    this.logger.log(`${this.counting} available again after ${seconds} s; ${outage.uncounted} requests were let through uncounted meanwhile`);
  }
}
