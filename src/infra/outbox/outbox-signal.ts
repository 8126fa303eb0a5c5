import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';
import { ServerInstance } from '../instances/server-instance.js';
import { REDIS } from '../redis/redis.module.js';

/**
 * "Outbox events were committed": told at once to listeners in this process, and through Redis pub/sub
 * to every other process (a second server, or the server when the CLI committed), so the relay wakes on
 * commit instead of on a poll tick. A lost signal (Redis away) costs only latency: the relay still polls.
 */
@Injectable()
export class OutboxSignal implements OnApplicationShutdown {
  private readonly logger = new Logger('OutboxSignal');
  private readonly channel: string;
  private listeners: Array<() => void> = [];
  private subscriber: Redis | null = null;
  /** Publishes are coalesced: while one is on its way, further commits only ask for one more. */
  private publishing = false;
  private publishAgain = false;

  constructor(
    private readonly config: AppConfig,
    private readonly instance: ServerInstance,
    @Inject(REDIS) private readonly redis: Redis,
  ) {
    this.channel = `${config.redisKeyPrefix}:outbox-committed`;
  }

  /** Called after a transaction that recorded outbox events committed. */
  committed(): void {
    for (const listener of this.listeners) listener();
    this.publish();
  }

  /** Calls `listener` after every commit with outbox events, in this process or another. */
  subscribe(listener: () => void): () => void {
    this.listeners.push(listener);
    if (!this.subscriber) this.subscriber = this.openSubscriber();
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  async onApplicationShutdown(): Promise<void> {
    const subscriber = this.subscriber;
    this.subscriber = null;
    await subscriber?.quit().catch(() => subscriber.disconnect());
  }

  private publish(): void {
    if (this.publishing) {
      this.publishAgain = true;
      return;
    }
    // The shared client fails fast while Redis is away; then other processes find the events by polling.
    if (this.redis.status !== 'ready') return;
    this.publishing = true;
    this.publishAgain = false;
    void this.redis
      .publish(this.channel, this.instance.id)
      .catch(() => undefined)
      .finally(() => {
        this.publishing = false;
        if (this.publishAgain) this.publish();
      });
  }

  private openSubscriber(): Redis {
    // A connection in subscriber mode takes no other commands, so it is its own; ioredis resubscribes after a reconnect.
    const subscriber = new Redis(this.config.redisUrl, { maxRetriesPerRequest: null, retryStrategy: (attempt) => Math.min(attempt * 200, 2000) });
    subscriber.on('error', () => undefined);
    subscriber.on('message', (_channel: string, from: string) => {
      // This process's own commits have already woken its listeners.
      if (from === this.instance.id) return;
      for (const listener of this.listeners) listener();
    });
    subscriber.subscribe(this.channel).catch((error: unknown) => this.logger.warn({ err: error }, 'Could not subscribe to outbox commits; relying on polling'));
    return subscriber;
  }
}
