import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DeliveryQueuer } from './delivery-queuer.js';
import { DeliverySignal } from './delivery-signal.js';
import { OutboxRelay } from './outbox-relay.js';

const BATCH = 500;
const POLL_MS = 50;
const STALE_CHECK_EVERY_MS = 30_000;

/**
 * Moves events from the outbox to the delivery queue, in two durable steps:
 *  1. relay (OutboxRelay): pending outbox rows become delivery rows, and are marked relayed;
 *  2. queue (DeliveryQueuer): delivery rows not yet queued go to BullMQ, then are marked queued.
 * A crash between any two steps leaves rows that the next pass (in this or another process) picks up;
 * while Redis is down, step 2 waits and deliveries accumulate in the database.
 * It polls every 50 ms (events committed by another process are seen only by polling) and is woken at
 * once after a commit in this process that recorded events. Each step is one set-based statement per batch.
 */
@Injectable()
export class DeliveryDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('DeliveryDispatcher');
  private running = false;
  private nudged = false;
  private wake: (() => void) | null = null;
  private loop: Promise<void> = Promise.resolve();
  private unsubscribe: () => void = () => undefined;
  private lastProblemLog = 0;
  private lastStaleCheck = 0;

  constructor(
    private readonly relay: OutboxRelay,
    private readonly queuer: DeliveryQueuer,
    private readonly signal: DeliverySignal,
  ) {}

  onApplicationBootstrap(): void {
    this.unsubscribe = this.signal.subscribe(() => this.nudge());
    this.running = true;
    this.loop = this.run();
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    this.unsubscribe();
    this.wake?.();
    await this.loop;
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
        const relayed = await this.relay.relay(BATCH);
        const queued = await this.queuer.queuePending(BATCH);
        if (Date.now() - this.lastStaleCheck > STALE_CHECK_EVERY_MS) {
          this.lastStaleCheck = Date.now();
          await this.queuer.requeueStale();
        }
        more = relayed === BATCH || queued === BATCH;
      } catch (error) {
        this.warn('Could not relay webhook events; retrying', error);
      }
      if (!more && !this.nudged && this.running) await this.sleep(POLL_MS);
      // SQLite's driver answers synchronously, so without this a busy loop would never let I/O run.
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wake = null;
        resolve();
      }
      this.wake = done;
    });
  }

  private warn(message: string, error: unknown): void {
    if (Date.now() - this.lastProblemLog < 30_000) return;
    this.lastProblemLog = Date.now();
    this.logger.warn({ err: error }, message);
  }
}
