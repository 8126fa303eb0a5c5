import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { DeliveryAttempts } from './delivery-attempts.js';
import { DeliveryQueuer } from './delivery-queuer.js';
import type { DeliveryToAttempt } from './delivery-reader.js';
import { retryDelayMs } from './delivery-schedule.js';
import { WebhookSlots } from './webhook-slots.js';

/**
 * Makes the first attempt of a new delivery in the process that relayed it, straight after the relay's
 * commit, instead of waiting for the queue worker to fetch its job: the worker fetches jobs one Redis
 * round trip at a time, and a process busy with requests turns each round trip into a turn of its event
 * loop (tens of milliseconds), so under load jobs waited seconds in Redis.
 *
 * Nothing is lost: the delivery row is committed before the attempt, and its BullMQ job is added all the
 * same, delayed past the longest an attempt can take (FIRST_ATTEMPT_GUARD_MS). Once the attempt is
 * recorded, a success removes that job and a failure makes it due at the usual retry time, where it
 * carries on with attempts 2 and 3. Killed before recording, the process leaves the job to fire and make
 * the attempt again (at least once). Only free slots are used (WEBHOOK_DELIVERY_CONCURRENCY and the share
 * of one webhook, see WebhookSlots); deliveries beyond them get a job due at once. A first attempt needs no
 * Redis: while it is down first attempts still go out, and what needs the queue (retries, deliveries beyond
 * the free slots) waits in the database, unqueued, until it is back.
 */
@Injectable()
export class FirstAttempts implements OnApplicationShutdown {
  private readonly logger = new Logger('WebhookDelivery');
  private readonly inFlight = new Map<string, Promise<void>>();
  private lastProblemLog = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly slots: WebhookSlots,
    private readonly attempts: DeliveryAttempts,
    private readonly queuer: DeliveryQueuer,
  ) {}

  /** Whether this process is making an attempt at this delivery right now. */
  isAttempting(deliveryId: string): boolean {
    return this.inFlight.has(deliveryId);
  }

  /** Takes a slot for each delivery it can attempt now; answers the ids it took. */
  take(deliveries: DeliveryToAttempt[]): Set<string> {
    const taken = new Set<string>();
    for (const delivery of deliveries) {
      if (this.slots.total >= this.config.webhookDeliveryConcurrency) break;
      if (this.slots.tryAcquire(delivery.webhookId)) taken.add(delivery.id);
    }
    return taken;
  }

  /** Gives back the slots of deliveries taken but not attempted after all (their rows were not inserted). */
  release(deliveries: DeliveryToAttempt[]): void {
    for (const delivery of deliveries) this.slots.release(delivery.webhookId);
  }

  /** Makes the first attempt at each taken delivery; `queued` settles once their guard jobs are in Redis (or not). */
  start(deliveries: DeliveryToAttempt[], queued: Promise<boolean>): void {
    for (const delivery of deliveries) {
      const attempt = this.attempt(delivery, queued).finally(() => this.inFlight.delete(delivery.id));
      this.inFlight.set(delivery.id, attempt);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.inFlight.values()]);
  }

  private async attempt(delivery: DeliveryToAttempt, queued: Promise<boolean>): Promise<void> {
    try {
      let result;
      try {
        result = await this.attempts.send(delivery);
      } finally {
        this.slots.release(delivery.webhookId);
      }
      const recorded = await this.attempts.record(delivery, 1, result);
      // Not recorded: the delivery changed meanwhile (deleted webhook); its guard job finds that out by itself.
      if (!recorded.recorded || !(await queued)) return;
      await this.queuer.afterFirstAttempt(delivery, recorded.status === 'pending' ? retryDelayMs(1) : null);
    } catch (error) {
      // The guard job (or, without one, the sweep) makes the attempt again.
      if (Date.now() - this.lastProblemLog > 30_000) {
        this.lastProblemLog = Date.now();
        this.logger.warn({ err: error, deliveryId: delivery.id }, 'A first delivery attempt could not be completed; its queue job takes over');
      }
    }
  }
}
