import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { OutboxSignal } from '../../../infra/outbox/outbox-signal.js';
import { DeliveryQueuer, type SeriesToQueue } from './delivery-queuer.js';
import { DeliverySignal } from './delivery-signal.js';
import { FirstAttempts } from './first-attempts.js';
import { OutboxRelay, type RelayPass } from './outbox-relay.js';

const BATCH = 500;
/** Only a safety net (a signal lost while Redis was away, rows written by hand): every commit wakes the relay. */
const POLL_MS = 1_000;
/**
 * SQLite only: while events keep coming, a pass starts at least this long after the last pass that relayed some, so a
 * burst's commits go in one pass rather than one pass each (a pass and the media work on its batch cost about a dozen
 * statements and two write transactions on the one connection, whatever the batch's size). The first event after a
 * quiet spell is relayed at once. PostgreSQL's passes batch by themselves: commits go on while a pass waits for its
 * answers.
 */
const GATHER_MS = 15;
/** How often the safety net (DeliveryQueuer.requeueStale) looks for deliveries that lost their job. */
const STALE_CHECK_EVERY_MS = 30_000;

/**
 * Moves events from the outbox to the delivery queue, in two durable steps:
 *  1. relay (OutboxRelay): pending outbox rows become delivery rows, and are marked relayed;
 *  2. queue (DeliveryQueuer): the new delivery rows go to BullMQ in one addBulk, then are marked queued.
 * Step 2 runs beside the relay loop rather than inside it, so events committed while one addBulk is on its
 * way to Redis are relayed at once. Beside it, the first attempt at each new delivery is made here at once, or
 * as soon as a slot is free (FirstAttempts), their rows held by this process until the attempt is logged (taken back
 * by another process if this one dies, see FirstAttempts.releaseAbandoned, checked every heartbeat). A crash between
 * any two steps leaves rows that a later sweep (in this or another process) picks up: the sweep queues every delivery
 * still unqueued, and runs on each poll tick, after a delivery was created outside the relay (test event,
 * redelivery), after queueing failed, and after held rows were taken back.
 * While Redis is down, step 2 waits and deliveries accumulate in the database.
 * The relay is woken at once after every commit that recorded events: in this process by OutboxSignal
 * directly, in another (a second server, the CLI) through OutboxSignal's Redis channel; it also polls
 * once a second as a safety net. Neither step waits behind requests for SQLite's one connection (reads
 * outside transactions, writes through Transactions.runFirst).
 */
@Injectable()
export class DeliveryDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('DeliveryDispatcher');
  private running = false;
  private nudged = false;
  /** Whether the next pass should also queue deliveries found unqueued in the database. */
  private sweep = true;
  private wake: (() => void) | null = null;
  private loop: Promise<void> = Promise.resolve();
  private readonly queueing = new Set<Promise<void>>();
  private checking: Promise<void> | null = null;
  private unsubscribe: () => void = () => undefined;
  private lastProblemLog = 0;
  private lastStaleCheck = 0;
  private lastHeldCheck = 0;
  /** When the last pass that relayed events ended (performance.now()). */
  private lastRelayedAt = -Infinity;
  private readonly gatherMs: number;

  constructor(
    private readonly relay: OutboxRelay,
    private readonly queuer: DeliveryQueuer,
    private readonly firstAttempts: FirstAttempts,
    private readonly signal: DeliverySignal,
    private readonly outboxSignal: OutboxSignal,
    private readonly config: AppConfig,
    transactions: Transactions,
  ) {
    this.gatherMs = transactions.dialect.concurrentTransactions ? 0 : GATHER_MS;
  }

  onApplicationBootstrap(): void {
    const unsubscribeDeliveries = this.signal.subscribe(() => {
      this.sweep = true;
      this.nudge();
    });
    const unsubscribeOutbox = this.outboxSignal.subscribe(() => this.nudge());
    this.unsubscribe = () => {
      unsubscribeDeliveries();
      unsubscribeOutbox();
    };
    this.running = true;
    this.loop = this.run();
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    this.unsubscribe();
    this.wake?.();
    await this.loop;
    await Promise.all([...this.queueing, this.checking]);
    await this.relay.close();
  }

  nudge(): void {
    this.nudged = true;
    this.wake?.();
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.nudged = false;
      let more = false;
      try {
        const sinceLastBatch = performance.now() - this.lastRelayedAt;
        if (sinceLastBatch < this.gatherMs) await new Promise((resolve) => setTimeout(resolve, this.gatherMs - sinceLastBatch));
        const pass = await this.relay.relay(BATCH);
        if (pass.relayed > 0) this.lastRelayedAt = performance.now();
        this.handOver(pass);
        if (this.sweep) {
          this.sweep = false;
          more = (await this.queuer.queuePending(BATCH)) === BATCH;
          if (more) this.sweep = true;
        }
        this.checkInBackground();
        more = more || pass.relayed === BATCH;
      } catch (error) {
        this.sweep = true;
        this.warn('Could not relay webhook events; retrying', error);
      }
      if (!more && !this.nudged && this.running) {
        if (!(await this.sleep(POLL_MS))) this.sweep = true;
      }
      // SQLite's driver answers synchronously, so without this a busy loop would never let I/O run.
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Starts the first attempts of the pass's new deliveries here and queues the others, neither holding up the relay. */
  private handOver({ deliveries }: RelayPass): void {
    this.firstAttempts.start(deliveries.filter((delivery) => delivery.firstAttemptHere));
    const others = deliveries.filter((delivery) => !delivery.firstAttemptHere).map(({ id, series }) => ({ id, series }));
    if (others.length > 0) this.queueInBackground(others);
  }

  /** Hands new deliveries to BullMQ without holding up the relay; what fails is left for the sweep. */
  private queueInBackground(deliveries: SeriesToQueue[]): void {
    const settled = this.queuer
      .queue(deliveries)
      .then((queued) => {
        if (!queued) this.sweep = true;
      })
      .catch((error: unknown) => {
        this.sweep = true;
        this.warn('Could not queue webhook deliveries; retrying', error);
      })
      .finally(() => this.queueing.delete(settled));
    this.queueing.add(settled);
  }

  /**
   * The periodic checks: rows held for first attempts by dead processes (every heartbeat), and deliveries that lost
   * their job (every STALE_CHECK_EVERY_MS). Beside the relay loop, not in it: their statements wait for a pooled
   * connection (PostgreSQL) or the write turn (SQLite), which requests may hold, and the relay must not wait with them.
   */
  private checkInBackground(): void {
    const now = Date.now();
    const held = now - this.lastHeldCheck > this.config.instanceHeartbeatMs;
    const stale = now - this.lastStaleCheck > STALE_CHECK_EVERY_MS;
    if (this.checking || (!held && !stale)) return;
    if (held) this.lastHeldCheck = now;
    if (stale) this.lastStaleCheck = now;
    this.checking = (async () => {
      const released = (held ? await this.firstAttempts.releaseAbandoned() : 0) + (stale ? await this.queuer.requeueStale() : 0);
      if (released > 0) {
        this.sweep = true;
        this.nudge();
      }
    })()
      .catch((error: unknown) => this.warn('Could not check for deliveries left behind; retrying', error))
      .finally(() => {
        this.checking = null;
      });
  }

  /** Answers true when woken, false when the time ran out. */
  private sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), ms);
      const done = (woken: boolean) => {
        clearTimeout(timer);
        this.wake = null;
        resolve(woken);
      };
      this.wake = () => done(true);
    });
  }

  private warn(message: string, error: unknown): void {
    if (Date.now() - this.lastProblemLog < 30_000) return;
    this.lastProblemLog = Date.now();
    this.logger.warn({ err: error }, message);
  }
}
