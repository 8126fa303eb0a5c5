import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';
import { Draining } from '../../infra/shutdown/draining.js';

/** A registered wait for an account's next events; `until` resolves on a wake-up, the deadline or an abort. */
export interface FeedWait {
  until(deadline: number, signal: AbortSignal): Promise<void>;
  cancel(): void;
}

/**
 * Wakes long-polling feed requests when events of their account are stamped, in any server process:
 * the sequencer publishes the account ids of each stamped batch on one Redis channel; every process holds
 * one subscription and fans the message out in memory to the requests waiting for those accounts. A
 * waiting request costs no database query until its account has something new.
 */
@Injectable()
export class FeedWakeups implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('FeedWakeups');
  private readonly waiting = new Map<string, Set<() => void>>();
  private subscriber: Redis | null = null;
  /** Set when the server starts to stop: waits end at once, so long polls answer rather than hold the shutdown up. */
  closed = false;
  /** Counts the wake-up messages received: reads begun in different generations must not be shared (ListEventsHandler). */
  generation = 0;

  constructor(
    private readonly config: AppConfig,
    draining: Draining,
  ) {
    draining.onStart(() => this.releaseWaits());
  }

  get channel(): string {
    return `${this.config.redisKeyPrefix}:events:stamped`;
  }

  async onApplicationBootstrap(): Promise<void> {
    // A subscribed connection takes no other commands, so it is this process's own; ioredis resubscribes after a reconnect.
    const subscriber = new Redis(this.config.redisUrl, { maxRetriesPerRequest: null, retryStrategy: (attempt) => Math.min(attempt * 200, 2000) });
    subscriber.on('error', () => undefined);
    subscriber.on('message', (_channel: string, message: string) => this.wake(message));
    this.subscriber = subscriber;
    await subscriber.subscribe(this.channel).catch((error: unknown) => this.logger.warn({ err: error }, 'Cannot subscribe to feed wake-ups; long polls answer at their deadline'));
  }

  async onApplicationShutdown(): Promise<void> {
    this.releaseWaits();
    await this.subscriber?.quit().catch(() => this.subscriber?.disconnect());
  }

  /** Registers interest in the account's next events; register before reading, so no wake-up falls between. */
  prepare(accountId: string): FeedWait {
    let woken = false;
    let resolveWait: (() => void) | null = null;
    const listener = () => {
      woken = true;
      resolveWait?.();
    };
    let listeners = this.waiting.get(accountId);
    if (!listeners) this.waiting.set(accountId, (listeners = new Set()));
    listeners.add(listener);
    const cancel = () => {
      const set = this.waiting.get(accountId);
      set?.delete(listener);
      if (set?.size === 0) this.waiting.delete(accountId);
    };
    return {
      cancel,
      until: (deadline, signal) =>
        new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            cancel();
            resolve();
          };
          const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
          signal.addEventListener('abort', done);
          resolveWait = done;
          if (woken || signal.aborted || this.closed) done();
        }),
    };
  }

  /** How many requests are waiting (for metrics and tests). */
  get waiters(): number {
    let count = 0;
    for (const listeners of this.waiting.values()) count += listeners.size;
    return count;
  }

  private releaseWaits(): void {
    this.closed = true;
    for (const listeners of this.waiting.values()) for (const listener of [...listeners]) listener();
  }

  private wake(message: string): void {
    let accounts: unknown;
    try {
      accounts = JSON.parse(message);
    } catch {
      return;
    }
    if (!Array.isArray(accounts)) return;
    this.generation++;
    for (const accountId of accounts) {
      const listeners = this.waiting.get(String(accountId));
      if (listeners) for (const listener of [...listeners]) listener();
    }
  }
}
