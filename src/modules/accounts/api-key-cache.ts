import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';
import { REDIS } from '../../infra/redis/redis.module.js';
import type { Authentication } from './queries/authenticate-api-key.query.js';

/** Enough for every key in use on a busy server; an entry is a few hundred bytes. */
const MAX_KEYS = 10_000;
/** How long a revocation waits for every subscribed process to confirm it has forgotten the key. */
const ACK_WAIT_MS = 1000;

/** What stops being valid: one key (revoked), or every key of an account (its plan or existence changed). */
export type KeyInvalidation = { keyId: string } | { accountId: string };

/**
 * API key lookups, reused for API_KEY_CACHE_SECONDS so a request costs no database round trip for its
 * key. A revocation must still take effect at once in every server process, so:
 * - the process that revokes publishes the key id on a Redis channel after its transaction commits; every
 *   process (itself included) drops the entry when the message arrives and confirms it, and the revocation
 *   is answered once every process that received the message has confirmed (at most ACK_WAIT_MS), so a
 *   request sent after that answer is refused by every process;
 * - a process keeps entries only while its subscription is live: when the connection drops it forgets
 *   everything and looks keys up in the database until it is subscribed again, so a message it could not
 *   hear can never leave a revoked key cached;
 * - a lookup that was in flight when an invalidation arrived is not kept (it may have read the row
 *   before the revocation committed).
 * Entries are keyed by the key's hash, never by the secret.
 */
@Injectable()
export class ApiKeyCache implements OnApplicationShutdown {
  private readonly logger = new Logger('ApiKeyCache');
  private readonly entries = new Map<string, { authentication: Authentication; expiresAt: number }>();
  private readonly channel: string;
  /** Bumped by every invalidation and every lost subscription. */
  private generation = 0;
  private subscriber: Redis | null = null;
  private subscribed = false;

  constructor(
    private readonly config: AppConfig,
    @Inject(REDIS) private readonly redis: Redis,
  ) {
    this.channel = `${config.redisKeyPrefix}:api-key-invalidations`;
  }

  /** The cached lookup of the key with this hash, or `load`'s answer (kept when the key is live). */
  async lookup(keyHash: string, load: () => Promise<Authentication | null>): Promise<Authentication | null> {
    if (this.config.apiKeyCacheMs === 0) return load();
    this.listen();
    const now = Date.now();
    const cached = this.entries.get(keyHash);
    if (cached && cached.expiresAt > now) return cached.authentication;
    if (cached) this.entries.delete(keyHash);
    const generation = this.generation;
    const authentication = await load();
    if (authentication && this.subscribed && generation === this.generation) {
      if (this.entries.size >= MAX_KEYS) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(keyHash, { authentication, expiresAt: now + this.config.apiKeyCacheMs });
    }
    return authentication;
  }

  /**
   * A mark to tell later whether a key may have been revoked since (`unchangedSince`); null while the
   * subscription is not live, when a revocation could go unheard.
   */
  checkpoint(): number | null {
    return this.subscribed ? this.generation : null;
  }

  /** True when no invalidation arrived and the subscription stayed live since `checkpoint`: no key was revoked meanwhile. */
  unchangedSince(checkpoint: number | null): boolean {
    return checkpoint !== null && this.subscribed && this.generation === checkpoint;
  }

  /**
   * Subscribes to invalidations (once); until the subscription is live nothing is cached. The HTTP server
   * calls it at start; command-line processes build this class too, but never look a key up.
   */
  listen(): void {
    if (this.config.apiKeyCacheMs > 0) this.subscriber ??= this.subscribe();
  }

  /**
   * Tells every server process (this one at once) to forget the keys `invalidation` names. Call it after
   * the change committed. If Redis cannot take the message, other processes forget within the cache lifetime.
   */
  async invalidate(invalidation: KeyInvalidation): Promise<void> {
    this.forget(invalidation);
    const ack = `${this.channel}:ack:${randomUUID()}`;
    try {
      const receivers = await this.redis.publish(this.channel, JSON.stringify({ ...invalidation, ack }));
      await this.confirmedBy(ack, receivers);
    } catch (error) {
      this.logger.warn({ err: error }, `Could not publish an API key invalidation; other server processes may accept the key for up to ${this.config.apiKeyCacheMs / 1000} s`);
    }
  }

  /** Waits until `receivers` processes have confirmed the invalidation `ack` names, or ACK_WAIT_MS. */
  private async confirmedBy(ack: string, receivers: number): Promise<void> {
    const deadline = Date.now() + ACK_WAIT_MS;
    try {
      while (Number(await this.redis.get(ack)) < receivers) {
        if (Date.now() > deadline) {
          this.logger.warn(`An API key invalidation was confirmed by fewer than the ${receivers} subscribed processes within ${ACK_WAIT_MS} ms`);
          return;
        }
        await sleep(2);
      }
    } finally {
      await this.redis.del(ack).catch(() => undefined);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    const subscriber = this.subscriber;
    this.subscriber = null;
    this.subscribed = false;
    if (subscriber) await subscriber.quit().catch(() => subscriber.disconnect());
  }

  private forget(invalidation: KeyInvalidation): void {
    this.generation++;
    for (const [hash, { authentication }] of this.entries) {
      const actor = authentication.actor;
      if ('keyId' in invalidation ? actor.keyId === invalidation.keyId : actor.accountId === invalidation.accountId) this.entries.delete(hash);
    }
  }

  private forgetEverything(): void {
    this.generation++;
    this.subscribed = false;
    this.entries.clear();
  }

  private subscribe(): Redis {
    const subscriber = new Redis(this.config.redisUrl, {
      // Subscribed again by hand on every connection, so `subscribed` is true only once the channel is.
      autoResubscribe: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    });
    subscriber.on('error', () => undefined);
    subscriber.on('close', () => this.forgetEverything());
    subscriber.on('ready', () => {
      subscriber.subscribe(this.channel).then(
        () => {
          if (this.subscriber === subscriber) this.subscribed = true;
        },
        () => subscriber.disconnect(true),
      );
    });
    subscriber.on('message', (_channel: string, message: string) => {
      let ack: unknown;
      try {
        const invalidation = JSON.parse(message) as KeyInvalidation & { ack?: unknown };
        ack = invalidation.ack;
        this.forget(invalidation);
      } catch {
        this.entries.clear();
      }
      // Confirmed on the shared connection (a subscribed one cannot send commands); the key outlives a lost publisher.
      if (typeof ack === 'string') void this.redis.multi().incr(ack).expire(ack, 60).exec().catch(() => undefined);
    });
    return subscriber;
  }
}
