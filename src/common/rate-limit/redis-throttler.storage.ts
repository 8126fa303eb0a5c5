import { Logger } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';

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

  constructor(
    private readonly redis: Redis,
    private readonly config: AppConfig,
  ) {}

  async increment(key: string, ttl: number, limit: number): Promise<WindowRecord> {
    const now = Date.now();
    const windowStart = Math.floor(now / ttl) * ttl;
    const windowEnd = windowStart + ttl;
    const secondsLeft = Math.max(1, Math.ceil((windowEnd - now) / 1000));
    const redisKey = `${this.config.redisKeyPrefix}:ratelimit:${key}:${windowStart}`;
    let totalHits: number;
    try {
      const results = await this.redis.multi().incr(redisKey).pexpire(redisKey, ttl + 5000).exec();
      totalHits = Number(results?.[0]?.[1] ?? 0);
    } catch (error) {
      // Fail open: an unreachable Redis must not take the API down with it.
      this.logger.warn({ err: error }, 'Rate-limit counter unavailable; request allowed');
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
}
