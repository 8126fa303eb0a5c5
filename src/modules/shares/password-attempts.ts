import { setTimeout as sleep } from 'node:timers/promises';
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
/**
 * A client that gave a link's right password is a known visitor of it this long after the last time: the link's
 * back-off, which anyone who knows the token can keep going with one wrong guess an hour, does not hold for it.
 */
export const KNOWN_VISITOR_SECONDS = 30 * 24 * 60 * 60;
/** A link's count of wrong passwords is forgotten this long after the last one. */
const LINK_FAILURE_MEMORY_MS = 24 * 60 * 60 * 1000;
/**
 * A password check in flight holds its place this long at most: far longer than any scrypt check, so only a
 * check whose process died outlives it, and that one then counts as wrong.
 */
export const PASSWORD_CHECK_DEADLINE_MS = 10_000;
/** How long an attempt waits for the checks in flight whose outcome decides whether it may be checked. */
export const PASSWORD_CHECK_WAIT_MS = 5_000;
const PASSWORD_CHECK_POLL_MS = 50;

/** Why a password attempt is refused: this client is locked out, the link is backing off, or checks in flight did not end in time. */
export type PasswordRefusal = 'client' | 'link' | 'checking';

export class TooManyPasswordAttempts extends ApiError {
  constructor(
    readonly retryAfterSeconds: number,
    readonly refusal: PasswordRefusal = 'client',
  ) {
    super(
      429,
      'rate_limit_exceeded',
      {
        client: `Too many wrong passwords for this share link; retry in ${retryAfterSeconds} s.`,
        link: `This share link has had too many wrong passwords; it takes the next one in ${retryAfterSeconds} s.`,
        checking: `Other passwords for this share link are being checked; retry in ${retryAfterSeconds} s.`,
      }[refusal],
      refusal === 'client'
        ? { limit: MAX_FAILED_PASSWORD_ATTEMPTS, window_seconds: PASSWORD_ATTEMPT_WINDOW_SECONDS, retry_after: retryAfterSeconds }
        : { retry_after: retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

/** What the scripts answer instead of a count when an attempt cannot be taken now. */
const REFUSED = -1;
const CHECK_IN_FLIGHT = -2;

/**
 * Takes one attempt if the client has attempts left, and marks it in flight (KEYS[2]) until it is settled.
 * At the limit with attempts of this client still in flight, their outcome decides: [-2, ms they may still take];
 * otherwise the client is locked out: [-1, ms left in the window]. Taken: [count after taking, ms left in the window,
 * 1 when the client is a known visitor of the link (KEYS[3]), else 0].
 * ARGV: limit, window ms, check deadline ms.
 */
const TAKE_ATTEMPT = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used >= tonumber(ARGV[1]) then
  if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then return {-2, redis.call('PTTL', KEYS[2])} end
  return {-1, redis.call('PTTL', KEYS[1])}
end
used = redis.call('INCR', KEYS[1])
if used == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {used, redis.call('PTTL', KEYS[1]), redis.call('EXISTS', KEYS[3])}
`;

/**
 * Settles an attempt: no longer in flight, and given back (ARGV[1] = '1': the password was right, or it was never
 * checked) or left counted ('0': wrong), without resurrecting a window that has ended.
 */
const SETTLE_ATTEMPT = `
if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then redis.call('DECR', KEYS[2]) end
if ARGV[1] == '1' and tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
return 0
`;

/**
 * Takes one attempt on a link from any client. Past the free failures every attempt starts a back-off that
 * doubles each time, so however many addresses guess, the link takes about one guess per back-off; it holds
 * from before the password is checked, so parallel guesses wait too. While that check is in flight
 * (`checking_until`, its deadline) other attempts are told so ([-2, ms to its deadline]) rather than refused for
 * the back-off, which only a wrong password confirms; after the deadline the back-off holds as if it was wrong.
 * During a back-off: [-1, ms left]. The link remembers its failures from its first attempt on; only a wrong
 * password makes it remember them longer (`countAsWrong`).
 * ARGV: now ms, free failures, max back-off ms, memory ms, check deadline ms.
 * Answers [attempts, 0, locked_until before (0: none), locked_until set (0: none)].
 */
const TAKE_LINK_ATTEMPT = `
local now = tonumber(ARGV[1])
local checking = tonumber(redis.call('HGET', KEYS[1], 'checking_until') or '0')
if now < checking then return {-2, checking - now, 0, 0} end
local lockedUntil = tonumber(redis.call('HGET', KEYS[1], 'locked_until') or '0')
if now < lockedUntil then return {-1, lockedUntil - now, 0, 0} end
local fresh = redis.call('EXISTS', KEYS[1]) == 0
local used = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
local beyond = used - tonumber(ARGV[2])
local locks = 0
if beyond > 0 then
  locks = now + math.min(1000 * 2 ^ math.min(beyond - 1, 30), tonumber(ARGV[3]))
  redis.call('HSET', KEYS[1], 'locked_until', locks, 'checking_until', now + tonumber(ARGV[5]))
end
if fresh then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return {used, 0, lockedUntil, locks}
`;

/**
 * A wrong password on a link: the back-off its attempt started (ARGV[1], 0: none) is confirmed, so it ends
 * being a check in flight, and the link remembers its failures for ARGV[2] ms from now.
 */
const CONFIRM_LINK_FAILURE = `
if tonumber(ARGV[1]) > 0 and tonumber(redis.call('HGET', KEYS[1], 'locked_until') or '0') == tonumber(ARGV[1]) then
  redis.call('HDEL', KEYS[1], 'checking_until')
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 0
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
  redis.call('HDEL', KEYS[1], 'checking_until')
  if tonumber(ARGV[1]) > 0 then redis.call('HSET', KEYS[1], 'locked_until', ARGV[1]) else redis.call('HDEL', KEYS[1], 'locked_until') end
end
return left
`;

/** Reads the client's attempts: [attempts used, ms left in the window, attempts in flight, 1 when a known visitor of the link]. */
const READ_ATTEMPTS = `return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or '0'), redis.call('EXISTS', KEYS[3])}`;

/** Ms left in the link's back-off (ARGV[1]: now ms); 0 when there is none, or while the check that started it is in flight. */
const READ_LINK_BACKOFF = `
local now = tonumber(ARGV[1])
if now < tonumber(redis.call('HGET', KEYS[1], 'checking_until') or '0') then return 0 end
local lockedUntil = tonumber(redis.call('HGET', KEYS[1], 'locked_until') or '0')
if now < lockedUntil then return lockedUntil - now end
return 0
`;

/**
 * Limits password guesses in Redis, so every server process enforces one limit: per (share link,
 * client network: an IPv6 client by its /64) a fixed number per window, and per link, whatever the
 * number of addresses, an increasing back-off once it has had its free wrong passwords. An attempt is
 * taken atomically before the password is checked and given back when it was right (with any back-off it
 * started), so even parallel guesses cannot exceed the limit and a right password never makes anyone wait.
 * An attempt that would be refused only because of checks still in flight (they may yet be given back)
 * waits for their outcome, briefly, instead of being told to come back after a back-off or lockout that
 * may never happen. Once the limit is reached the client is refused, even with the right password, until
 * the window ends. A client that gave the right password is a known visitor of the link for a while: its
 * attempts skip the link's back-off (and leave the link's count alone), so someone who knows the token and keeps the
 * link backing off cannot lock out the people it was shared with; its own per-client limit still holds. Unlike the
 * request rate limit this fails closed: without Redis a protected link answers 503 rather than allowing unlimited
 * guesses.
 */
@Injectable()
export class PasswordAttempts {
  private readonly logger = new Logger('SharePasswordAttempts');

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  /** The client's attempt counter, its count of attempts in flight, and its mark as a known visitor of the link. */
  private clientKeys(shareId: string, clientIp: string): [string, string, string] {
    const client = `${shareId}:${clientNetwork(clientIp)}`;
    const prefix = this.config.redisKeyPrefix;
    return [`${prefix}:share-password-failures:${client}`, `${prefix}:share-password-checking:${client}`, `${prefix}:share-password-known:${client}`];
  }

  private linkKey(shareId: string): string {
    return `${this.config.redisKeyPrefix}:share-password-link:${shareId}`;
  }

  /** Throws TooManyPasswordAttempts while this client is locked out of this link (uses no attempt). */
  async assertNotLockedOut(shareId: string, clientIp: string): Promise<void> {
    await this.readClient(shareId, clientIp);
  }

  /** Throws TooManyPasswordAttempts while this client is locked out of this link; answers whether it is a known visitor of it. */
  private async readClient(shareId: string, clientIp: string): Promise<{ known: boolean }> {
    const [used, ttl, inFlight, known] = await this.guard(() => this.redis.eval(READ_ATTEMPTS, 3, ...this.clientKeys(shareId, clientIp)) as Promise<[number, number, number, number]>);
    if (used >= MAX_FAILED_PASSWORD_ATTEMPTS && inFlight === 0) throw new TooManyPasswordAttempts(retryAfter(ttl));
    return { known: known === 1 };
  }

  /**
   * Throws TooManyPasswordAttempts when this client could not have a password checked on this link now:
   * locked out, or the link backing off (uses no attempt). What the share page asks before showing its form.
   */
  async assertMayTry(shareId: string, clientIp: string): Promise<void> {
    const { known } = await this.readClient(shareId, clientIp);
    if (known) return;
    const backoffMs = await this.guard(() => this.redis.eval(READ_LINK_BACKOFF, 1, this.linkKey(shareId), this.clock.now().getTime()) as Promise<number>);
    if (backoffMs > 0) throw new TooManyPasswordAttempts(seconds(backoffMs), 'link');
  }

  /**
   * Takes one attempt, or throws TooManyPasswordAttempts when none is left. While the checks in flight
   * decide (a right password gives its attempt and back-off back), it waits up to PASSWORD_CHECK_WAIT_MS for
   * them, then refuses with a Retry-After of at most their deadline. The answer is what `giveBack` (a right
   * password) or `countAsWrong` (a wrong one) needs.
   */
  async take(shareId: string, clientIp: string): Promise<TakenAttempt> {
    // Real time, not the Clock: this bounds how long the request is held.
    const giveUpAt = performance.now() + PASSWORD_CHECK_WAIT_MS;
    for (;;) {
      const taken = await this.tryTake(shareId, clientIp);
      if (!('inFlightMs' in taken)) return taken;
      const waitMs = giveUpAt - performance.now();
      if (waitMs <= 0) throw new TooManyPasswordAttempts(seconds(taken.inFlightMs), 'checking');
      await sleep(Math.min(PASSWORD_CHECK_POLL_MS, waitMs));
    }
  }

  /** The attempt was a wrong password: it stays counted, a back-off it started holds, and the link remembers its failures for 24 h from now. */
  async countAsWrong({ shareId, clientIp, linkTaken, linkLockedBySelf }: TakenAttempt): Promise<void> {
    await this.guard(() => this.redis.eval(SETTLE_ATTEMPT, 2, ...this.clientKeys(shareId, clientIp).slice(0, 2), '0'));
    if (!linkTaken) return;
    await this.guard(() => this.redis.eval(CONFIRM_LINK_FAILURE, 1, this.linkKey(shareId), linkLockedBySelf, LINK_FAILURE_MEMORY_MS));
  }

  /**
   * The attempt was the right password: it counts neither against the client nor the link, and the
   * link's back-off and memory are as they were before it.
   */
  async giveBack({ shareId, clientIp, linkTaken, linkLockedBefore, linkLockedBySelf }: TakenAttempt): Promise<void> {
    const [failures, checking, known] = this.clientKeys(shareId, clientIp);
    await this.guard(() => this.redis.eval(SETTLE_ATTEMPT, 2, failures, checking, '1'));
    await this.guard(() => this.redis.set(known, '1', 'EX', KNOWN_VISITOR_SECONDS));
    if (!linkTaken) return;
    await this.guard(() => this.redis.eval(RETURN_LINK_ATTEMPT, 1, this.linkKey(shareId), linkLockedBefore, linkLockedBySelf));
  }

  /** One try at taking an attempt: taken, refused (thrown), or `inFlightMs` when checks in flight must decide first. */
  private async tryTake(shareId: string, clientIp: string): Promise<TakenAttempt | { inFlightMs: number }> {
    const clientKeys = this.clientKeys(shareId, clientIp);
    const [used, ms, known] = await this.guard(
      () =>
        this.redis.eval(TAKE_ATTEMPT, 3, ...clientKeys, MAX_FAILED_PASSWORD_ATTEMPTS, PASSWORD_ATTEMPT_WINDOW_SECONDS * 1000, PASSWORD_CHECK_DEADLINE_MS) as Promise<
          [number, number, number]
        >,
    );
    if (used === REFUSED) throw new TooManyPasswordAttempts(retryAfter(ms));
    if (used === CHECK_IN_FLIGHT) return { inFlightMs: ms };
    // A known visitor's guesses are bounded by its own limit; the link's back-off is for strangers.
    if (known === 1) return { shareId, clientIp, linkTaken: false, linkLockedBefore: 0, linkLockedBySelf: 0 };
    const [linkUsed, linkMs, lockedBefore, lockedBySelf] = await this.guard(
      () =>
        this.redis.eval(
          TAKE_LINK_ATTEMPT,
          1,
          this.linkKey(shareId),
          this.clock.now().getTime(),
          LINK_FREE_PASSWORD_FAILURES,
          LINK_MAX_BACKOFF_SECONDS * 1000,
          LINK_FAILURE_MEMORY_MS,
          PASSWORD_CHECK_DEADLINE_MS,
        ) as Promise<[number, number, number, number]>,
    );
    if (linkUsed < 0) {
      // Not checked: this guess does not count against the client.
      await this.guard(() => this.redis.eval(SETTLE_ATTEMPT, 2, ...clientKeys.slice(0, 2), '1'));
      if (linkUsed === REFUSED) throw new TooManyPasswordAttempts(seconds(linkMs), 'link');
      return { inFlightMs: linkMs };
    }
    return { shareId, clientIp, linkTaken: true, linkLockedBefore: lockedBefore, linkLockedBySelf: lockedBySelf };
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

/**
 * An attempt taken on a link, whether it was taken on the link's count too (not for a known visitor), and the link's
 * back-off before and after taking it (ms since the epoch; 0: none).
 */
export interface TakenAttempt {
  shareId: string;
  clientIp: string;
  linkTaken: boolean;
  linkLockedBefore: number;
  linkLockedBySelf: number;
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** Retry-After for a lockout: what is left of the window (the whole window if Redis reports no expiry). */
function retryAfter(ttlMs: number): number {
  return ttlMs > 0 ? seconds(ttlMs) : PASSWORD_ATTEMPT_WINDOW_SECONDS;
}
