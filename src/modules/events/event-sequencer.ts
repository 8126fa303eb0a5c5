import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { Transactions } from '../../infra/database/transactions.js';
import { OutboxSignal } from '../../infra/outbox/outbox-signal.js';
import { REDIS } from '../../infra/redis/redis.module.js';
import { FeedWakeups } from './feed-wakeups.js';

const BATCH = 1000;
/** A safety net only: every commit with outbox events, in any process, wakes the stamper (OutboxSignal). */
const POLL_MS = 1000;

/**
 * Gives every committed outbox event its feed position: the next number after the last one handed out,
 * in batches, AFTER the event's transaction committed. One stamper at a time in all processes: each batch
 * first locks the single event_feed_sequence row (PostgreSQL row lock; SQLite write transactions take
 * turns anyway), so batches commit in the order of their positions and a batch sees every stamp committed
 * before it. A reader therefore never finds a position that a later commit could fill in below it: the
 * feed, read in position order, only ever grows at its end (see docs/webhooks.md, "Why the cursor never
 * skips"). After each batch the stamped accounts are published so long polls wake (FeedWakeups).
 */
@Injectable()
export class EventSequencer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('EventSequencer');
  private running = false;
  private nudged = false;
  private wake: (() => void) | null = null;
  private loop: Promise<void> = Promise.resolve();
  private lastProblemLog = 0;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly transactions: Transactions,
    private readonly wakeups: FeedWakeups,
    private readonly outboxSignal: OutboxSignal,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  onApplicationBootstrap(): void {
    this.unsubscribe = this.outboxSignal.subscribe(() => this.nudge());
    this.running = true;
    this.loop = this.run();
  }

  async onApplicationShutdown(): Promise<void> {
    this.unsubscribe?.();
    this.running = false;
    this.wake?.();
    await this.loop;
  }

  nudge(): void {
    this.nudged = true;
    this.wake?.();
  }

  /** Stamps up to BATCH unstamped events; answers how many. */
  async stamp(): Promise<number> {
    const dialect = this.transactions.dialect;
    // Cheap and lock-free when there is nothing to do, which is most polls.
    const waiting: unknown[] = await this.dataSource.query('SELECT id FROM outbox_events WHERE feed_position IS NULL LIMIT 1');
    if (waiting.length === 0) return 0;
    const stamped = await this.transactions.run(async (tx) => {
      await tx.query('UPDATE event_feed_sequence SET last_position = last_position WHERE id = 1');
      const [sequence]: Array<{ last_position: string | number }> = await tx.query('SELECT last_position FROM event_feed_sequence WHERE id = 1');
      const rows: Array<{ id: string; account_id: string }> = await tx.query(
        `SELECT id, account_id FROM outbox_events WHERE feed_position IS NULL ORDER BY occurred_at, id LIMIT ${BATCH}`,
      );
      if (rows.length === 0) return rows;
      const last = Number(sequence.last_position);
      const params = dialect.parameters();
      const positions = params.add(JSON.stringify(rows.map((row, i) => ({ id: row.id, position: last + i + 1 }))));
      await tx.query(
        `UPDATE outbox_events SET feed_position = v.position FROM ${dialect.jsonRows(positions, { id: 'varchar', position: 'bigint' })}
         WHERE outbox_events.id = v.id`,
        params.values,
      );
      const next = dialect.parameters();
      await tx.query(`UPDATE event_feed_sequence SET last_position = ${next.add(last + rows.length)} WHERE id = 1`, next.values);
      return rows;
    });
    if (stamped.length > 0) {
      const accounts = [...new Set(stamped.map((row) => row.account_id))];
      await this.redis.publish(this.wakeups.channel, JSON.stringify(accounts)).catch((error: unknown) => this.warn('Cannot publish feed wake-ups', error));
    }
    return stamped.length;
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.nudged = false;
      let more = false;
      try {
        more = (await this.stamp()) === BATCH;
      } catch (error) {
        this.warn('Could not stamp feed positions; retrying', error);
      }
      if (!more && !this.nudged && this.running) await this.sleep(POLL_MS);
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private warn(message: string, error: unknown): void {
    if (Date.now() - this.lastProblemLog < 30_000) return;
    this.lastProblemLog = Date.now();
    this.logger.warn({ err: error }, message);
  }
}
