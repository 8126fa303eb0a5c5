import { Inject, Injectable, Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { Clock } from '../../common/clock.js';
import { ApiError, ServiceUnavailable } from '../../common/errors/api-error.js';
import { clientNetwork } from '../../common/net/ip-address.js';
import { AppConfig } from '../../config/app-config.js';
import { REDIS } from '../../infra/redis/redis.module.js';

/** Wrong passwords a client may try on one link before it is locked out. */
export const MAX_FAILED_PASSWORD_ATTEMPTS = 10;
/** The lockout window, counted from the first wrong password. */
export const PASSWORD_ATTEMPT_WINDOW_SECONDS = 15 * 60;
/** Wrong passwords a link takes from all clients together before every further guess waits (back-off). */
export const LINK_FREE_PASSWORD_FAILURES = 20;
/** The back-off doubles with each wrong password past the free ones, from 1 s up to this. */
export const LINK_MAX_BACKOFF_SECONDS = 60 * 60;
/** A link's count of wrong passwords is forgotten this long after the last one. */
const LINK_FAILURE_MEMORY_MS = 24 * 60 * 60 * 1000;

export class TooManyPasswordAttempts extends ApiError {
  constructor(retryAfterSeconds: number, scope: 'client' | 'link' = 'client') {
    super(
      429,
      'rate_limit_exceeded',
      scope === 'client'
        ? `Too many wrong passwords for this share link; retry in ${retryAfterSeconds} s.`
        : `This share link has had too many wrong passwords; it takes the next one in ${retryAfterSeconds} s.`,
      scope === 'client'
        ? { limit: MAX_FAILED_PASSWORD_ATTEMPTS, window_seconds: PASSWORD_ATTEMPT_WINDOW_SECONDS, retry_after: retryAfterSeconds }
        : { retry_after: retryAfterSeconds },
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

/**
 * Takes one attempt on a link from any client: refused while the link's back-off lasts ([-1, ms left]).
 * Past the free failures every attempt starts a back-off that doubles each time, so however many
 * addresses guess, the link takes about one guess per back-off; it holds from before the password is
 * checked, so parallel guesses wait too. The link remembers its failures from its first attempt on;
 * only a wrong password makes it remember them longer (`countAsWrong`).
 * ARGV: now ms, free failures, max back-off ms, memory ms.
 * Answers [attempts, 0, locked_until before (0: none), locked_until set (0: none)].
 */
const TAKE_LINK_ATTEMPT = `
local now = tonumber(ARGV[1])
local lockedUntil = tonumber(redis.call('HGET', KEYS[1], 'locked_until') or '0')
if now < lockedUntil then return {-1, lockedUntil - now, 0, 0} end
local fresh = redis.call('EXISTS', KEYS[1]) == 0
local used = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
local beyond = used - tonumber(ARGV[2])
local locks = 0
if beyond > 0 then
  locks = now + math.min(1000 * 2 ^ math.min(beyond - 1, 30), tonumber(ARGV[3]))
  redis.call('HSET', KEYS[1], 'locked_until', locks)
end
if fresh then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return {used, 0, lockedUntil, locks}
`;

/**
 * Gives a link attempt back (the password was right) and takes back the back-off it started, unless a
 * later attempt has started its own since. ARGV: locked_until before the attempt, the one it set (0: none).
 * A link left with no attempts is forgotten at once; otherwise its memory is left as the wrong passwords set it.
 */
const RETURN_LINK_ATTEMPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local left = tonumber(redis.call('HGET', KEYS[1], 'attempts') or '0')
if left > 0 then left = redis.call('HINCRBY', KEYS[1], 'attempts', -1) end
if left <= 0 then redis.call('DEL', KEYS[1]) return 0 end
if tonumber(ARGV[2]) > 0 and tonumber(redis.call('HGET', KEYS[1], 'locked_until') or '0') == tonumber(ARGV[2]) then
  if tonumber(ARGV[1]) > 0 then redis.call('HSET', KEYS[1], 'locked_until', ARGV[1]) else redis.call('HDEL', KEYS[1], 'locked_until') end
end
return left
`;

/** Reads whether the client is locked out: [attempts used, ms left in the window]. */
const READ_ATTEMPTS = `return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1])}`;

/**
 * Limits password guesses in Redis, so every server process enforces one limit: per (share link,
 * client network: an IPv6 client by its /64) a fixed number per window, and per link, whatever the
 * number of addresses, an increasing back-off once it has had its free wrong passwords. An attempt is taken atomically before the password is checked and given back when it
 * was right (with any back-off it started), so even parallel guesses cannot exceed the limit and a right password never makes anyone wait. Once the limit is reached the client
 * is refused, even with the right password, until the window ends. Unlike the request rate limit
 * this fails closed: without Redis a protected link answers 503 rather than allowing unlimited guesses.
 */
@Injectable()
export class PasswordAttempts {
  private readonly logger = new Logger('SharePasswordAttempts');

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  private key(shareId: string, clientIp: string): string {
    return `${this.config.redisKeyPrefix}:share-password-failures:${shareId}:${clientNetwork(clientIp)}`;
  }

  private linkKey(shareId: string): string {
    return `${this.config.redisKeyPrefix}:share-password-link:${shareId}`;
  }

  /** Throws TooManyPasswordAttempts while this client is locked out of this link (uses no attempt). */
  async assertNotLockedOut(shareId: string, clientIp: string): Promise<void> {
    const [used, ttl] = await this.guard(() => this.redis.eval(READ_ATTEMPTS, 1, this.key(shareId, clientIp)) as Promise<[number, number]>);
    if (used >= MAX_FAILED_PASSWORD_ATTEMPTS) throw new TooManyPasswordAttempts(retryAfter(ttl));
  }

  /**
   * Takes one attempt, or throws TooManyPasswordAttempts when none is left. The answer is what `giveBack`
   * (a right password) or `countAsWrong` (a wrong one) needs.
   */
  async take(shareId: string, clientIp: string): Promise<TakenAttempt> {
    const [used, ttl] = await this.guard(
      () => this.redis.eval(TAKE_ATTEMPT, 1, this.key(shareId, clientIp), MAX_FAILED_PASSWORD_ATTEMPTS, PASSWORD_ATTEMPT_WINDOW_SECONDS * 1000) as Promise<[number, number]>,
    );
    if (used < 0) throw new TooManyPasswordAttempts(retryAfter(ttl));
    const [linkUsed, lockedMs, lockedBefore, lockedBySelf] = await this.guard(
      () =>
        this.redis.eval(
          TAKE_LINK_ATTEMPT,
          1,
          this.linkKey(shareId),
          this.clock.now().getTime(),
          LINK_FREE_PASSWORD_FAILURES,
          LINK_MAX_BACKOFF_SECONDS * 1000,
          LINK_FAILURE_MEMORY_MS,
        ) as Promise<[number, number, number, number]>,
    );
    if (linkUsed < 0) {
      // Refused before any check: this guess does not count against the client.
      await this.guard(() => this.redis.eval(RETURN_ATTEMPT, 1, this.key(shareId, clientIp)));
      throw new TooManyPasswordAttempts(Math.max(1, Math.ceil(lockedMs / 1000)), 'link');
    }
    return { shareId, clientIp, linkLockedBefore: lockedBefore, linkLockedBySelf: lockedBySelf };
  }

  /** The attempt was a wrong password: it stays counted, and the link remembers its failures for 24 h from now. */
  async countAsWrong({ shareId }: TakenAttempt): Promise<void> {
    await this.guard(() => this.redis.pexpire(this.linkKey(shareId), LINK_FAILURE_MEMORY_MS));
  }

  /**
   * The attempt was the right password: it counts neither against the client nor the link, and the
   * link's back-off and memory are as they were before it.
   */
  async giveBack({ shareId, clientIp, linkLockedBefore, linkLockedBySelf }: TakenAttempt): Promise<void> {
    await this.guard(() => this.redis.eval(RETURN_ATTEMPT, 1, this.key(shareId, clientIp)));
    await this.guard(() => this.redis.eval(RETURN_LINK_ATTEMPT, 1, this.linkKey(shareId), linkLockedBefore, linkLockedBySelf));
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

/** An attempt taken on a link, and the link's back-off before and after taking it (ms since the epoch; 0: none). */
export interface TakenAttempt {
  shareId: string;
  clientIp: string;
  linkLockedBefore: number;
  linkLockedBySelf: number;
}

function retryAfter(ttlMs: number): number {
  return ttlMs > 0 ? Math.max(1, Math.ceil(ttlMs / 1000)) : PASSWORD_ATTEMPT_WINDOW_SECONDS;
}
