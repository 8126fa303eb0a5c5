import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';
import { createRedisClient, REDIS } from '../../infra/redis/redis.module.js';
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
 * database queries; every process remembers a refused client until the window ends (the one that
 * refused it tells the others on a Redis channel), so valid requests pay nothing extra. Like the
 * request rate limit it fails open without Redis.
 */
@Injectable()
export class FailedAuthentications implements OnApplicationShutdown {
  private readonly counters: RedisThrottlerStorage;
  private readonly refusedUntil = new Map<string, number>();
  private readonly channel: string;
  private subscriber: Redis | null = null;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly config: AppConfig,
  ) {
    this.counters = new RedisThrottlerStorage(redis, config, 'Wrong-API-key counters');
    this.channel = `${config.redisKeyPrefix}:refused-clients`;
  }

  /** Hears the clients other server processes refuse (once); the HTTP server calls it at start. */
  listen(): void {
    if (!this.config.rateLimitsEnabled || this.subscriber) return;
    const subscriber = createRedisClient(this.config);
    subscriber.on('error', () => undefined);
    // Commands are not queued while disconnected: subscribed on every (re)connection.
    subscriber.on('ready', () => void subscriber.subscribe(this.channel).catch(() => undefined));
    subscriber.on('message', (_channel: string, message: string) => {
      try {
        const { client, until } = JSON.parse(message) as { client?: unknown; until?: unknown };
        if (typeof client === 'string' && typeof until === 'number') this.refuse(client, until);
      } catch {
        // Not ours: ignored.
      }
    });
    this.subscriber = subscriber;
  }

  async onApplicationShutdown(): Promise<void> {
    const subscriber = this.subscriber;
    this.subscriber = null;
    if (subscriber) await subscriber.quit().catch(() => subscriber.disconnect());
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
    const until = window.resetAt * 1000;
    this.refuse(client, until);
    // Valid keys from this client are refused by every process, not only this one; without Redis only here.
    await this.redis.publish(this.channel, JSON.stringify({ client, until })).catch(() => undefined);
    return new TooManyFailedAuthentications(window.timeToBlockExpire);
  }

  private refuse(client: string, until: number): void {
    this.forgetExpired();
    this.refusedUntil.set(client, Math.max(until, this.refusedUntil.get(client) ?? 0));
  }

  private forgetExpired(): void {
    const now = Date.now();
    for (const [client, until] of this.refusedUntil) if (until <= now) this.refusedUntil.delete(client);
  }
}
