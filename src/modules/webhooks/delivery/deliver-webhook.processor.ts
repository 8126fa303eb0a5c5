import { Logger, OnApplicationBootstrap } from '@nestjs/common';
import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import { AppConfig } from '../../../config/app-config.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { DELIVERY_BACKOFF, retryDelayMs } from './delivery-schedule.js';
import { DeliveryAttempts } from './delivery-attempts.js';
import { DeliveryReader, type DeliveryToAttempt } from './delivery-reader.js';
import { FirstAttempts } from './first-attempts.js';
import { succeeded } from './webhook-sender.js';
import { WebhookSlots } from './webhook-slots.js';

/** A job early for its delivery's next attempt by more than this is put back until then. */
const EARLY_TOLERANCE_MS = 50;
/** How long a job waits when this process is making an attempt at its delivery already. */
const BUSY_DELAY_MS = 1_000;
/** How long a job waits when its delivery could not be read or its attempt logged. */
const DATABASE_RETRY_MS = 1_000;

export interface DeliveryJob {
  deliveryId: string;
  series: number;
  /**
   * Attempts the delivery had before this series, in jobs queued by earlier versions; the row's
   * attemptsBeforeSeries is the count now. Only a redelivery under way at the upgrade still needs it.
   */
  attemptsBefore?: number;
}

/** A failed attempt with attempts left; BullMQ schedules the next one by the attempt's place in its series. */
class AttemptFailed extends Error {
  constructor(
    message: string,
    readonly attemptInSeries: number,
  ) {
    super(message);
  }
}

/**
 * Delivers webhook events: one job per delivery series, three attempts on the 0/5/25 s schedule. The
 * first attempt of a new delivery is usually made by FirstAttempts, with no job of its own (its row is held by the
 * process making it); a failed first attempt gets its job for the others. Attempts are counted on the delivery row,
 * so it does not matter who made them.
 * A job only ever acts on a delivery still pending in the same series, so a duplicate job (a replay
 * after a crash, two relays) cannot deliver twice what has already succeeded.
 */
@Processor(QUEUES.webhookDeliveries, {
  settings: {
    backoffStrategy: (attemptsMade: number, type?: string, error?: Error) =>
      type === DELIVERY_BACKOFF ? retryDelayMs(error instanceof AttemptFailed ? error.attemptInSeries : attemptsMade) : 0,
  },
  // A killed worker's jobs are picked up again within about 15 s; attempts still get their full 30 s (the lock is renewed).
  lockDuration: 10_000,
  stalledInterval: 5_000,
  maxStalledCount: 5,
})
export class DeliverWebhookProcessor extends WorkerHost implements OnApplicationBootstrap {
  private readonly logger = new Logger('WebhookDelivery');
  private lastRedisWarning = 0;
  private lastDatabaseWarning = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly attempts: DeliveryAttempts,
    private readonly reader: DeliveryReader,
    private readonly slots: WebhookSlots,
    private readonly firstAttempts: FirstAttempts,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.config.webhookDeliveryConcurrency;
  }

  async process(job: Job<DeliveryJob>, token?: string): Promise<string> {
    const { deliveryId, series } = job.data;
    if (this.firstAttempts.isAttempting(deliveryId)) return this.postpone(job, Date.now() + BUSY_DELAY_MS, token);
    let delivery: DeliveryToAttempt | null;
    try {
      delivery = await this.reader.read(deliveryId);
    } catch (error) {
      return this.databaseAway(job, error, token);
    }
    if (!delivery || delivery.series !== series || delivery.status !== 'pending') return 'skipped';
    // Queued by the sweep after a failed first attempt (Redis did not take its retry job): wait for the retry's time.
    const due = delivery.nextAttemptAt?.getTime() ?? 0;
    if (due > Date.now() + EARLY_TOLERANCE_MS) return this.postpone(job, due, token);
    const webhookId = delivery.webhookId;

    if (!(await this.slots.acquire(webhookId))) {
      // Step aside briefly (not counted as an attempt) and let other receivers use the slot.
      return this.postpone(job, Date.now() + 100 + Math.floor(Math.random() * 100), token);
    }
    let result;
    try {
      result = await this.attempts.send(delivery);
    } finally {
      this.slots.release(webhookId);
    }

    // Counted from the row, not from the job: a job queued again mid-series (Redis lost the first) carries on with the series.
    const attemptsBefore = delivery.attemptsBeforeSeries ?? job.data.attemptsBefore;
    const attemptInSeries = attemptsBefore === undefined ? job.attemptsMade + 1 : delivery.attempts - attemptsBefore + 1;
    let recorded;
    try {
      recorded = await this.attempts.record(delivery, attemptInSeries, result);
    } catch (error) {
      // Not logged, so not counted: made again once the database is back (at least once).
      return this.databaseAway(job, error, token);
    }
    if (!recorded.recorded) return 'superseded';
    if (succeeded(result)) return 'succeeded';
    const error = result.error ?? 'delivery failed';
    // Failing the job lets BullMQ schedule the next attempt with the webhook backoff; after the last it gives up.
    if (recorded.status !== 'pending') throw new UnrecoverableError(error);
    throw new AttemptFailed(error, attemptInSeries);
  }

  /**
   * The database could not be read or written: the job waits for it rather than failing, which would use up one of
   * the three attempts BullMQ gives the job, and after three the job would be gone while its delivery stays pending
   * (the safety net cannot queue a job id that BullMQ still keeps as failed).
   */
  private databaseAway(job: Job<DeliveryJob>, error: unknown, token?: string): Promise<never> {
    if (Date.now() - this.lastDatabaseWarning > 60_000) {
      this.lastDatabaseWarning = Date.now();
      this.logger.warn({ err: error, deliveryId: job.data.deliveryId }, 'Webhook delivery cannot reach the database; its job waits');
    }
    return this.postpone(job, Date.now() + DATABASE_RETRY_MS, token);
  }

  /** Puts the job back until `at`, not counted as an attempt. */
  private async postpone(job: Job<DeliveryJob>, at: number, token?: string): Promise<never> {
    await job.moveToDelayed(at, token);
    throw new DelayedError();
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    // While Redis is away this fires on every reconnect attempt; once a minute in the log is enough.
    if (Date.now() - this.lastRedisWarning > 60_000) {
      this.lastRedisWarning = Date.now();
      this.logger.warn({ err: error }, 'Webhook delivery worker cannot reach Redis; deliveries wait until it is back');
    }
  }
}
