import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { JobsOptions, Queue } from 'bullmq';
import { Clock } from '../../../common/clock.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { deliveryJobId } from '../webhook-delivery.entity.js';
import type { DeliveryJob } from './deliver-webhook.processor.js';
import { DELIVERY_BACKOFF, MAX_ATTEMPTS } from './delivery-schedule.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';

const ENQUEUE_TIMEOUT_MS = 5_000;
/** A pending delivery this long past its due time has lost its job (e.g. Redis restarted without persistence). */
const STALE_AFTER_MS = 2 * 60_000;

/** A delivery series to queue. */
export interface SeriesToQueue {
  id: string;
  series: number;
}

/**
 * Hands delivery rows to BullMQ: each series not yet queued becomes a job whose id is derived from the
 * delivery (so adding it twice is a no-op), and the row is marked queued only after Redis took the job.
 */
@Injectable()
export class DeliveryQueuer {
  constructor(
    private readonly clock: Clock,
    private readonly deliveries: WebhookDeliveryRepository,
    @InjectQueue(QUEUES.webhookDeliveries) private readonly deliveryQueue: Queue<DeliveryJob>,
  ) {}

  /** Queues up to `batch` deliveries that have no job yet (the sweep); answers how many it queued. */
  async queuePending(batch: number): Promise<number> {
    if (!(await this.redisReady())) return 0;
    const pending = await this.deliveries.unqueued(batch);
    if (pending.length === 0) return 0;
    await this.queue(pending);
    return pending.length;
  }

  /**
   * Adds one job per delivery series in one addBulk, then marks the rows queued. Answers false, doing
   * nothing, while Redis is not connected. A job counts its series' attempts from the delivery row
   * (attempts since attemptsBeforeSeries), whoever made them, so a job queued again mid-series (Redis lost
   * the first) carries on where the series is rather than starting it over.
   */
  async queue(deliveries: SeriesToQueue[]): Promise<boolean> {
    if (deliveries.length === 0) return true;
    if (!(await this.redisReady())) return false;
    const jobs = deliveries.map((delivery) => this.deliveryJob(delivery));
    await withTimeout(this.deliveryQueue.addBulk(jobs), ENQUEUE_TIMEOUT_MS, 'queueing deliveries in Redis');
    await this.deliveries.markQueued(deliveries, this.clock.now());
    return true;
  }

  /**
   * After a failed first attempt made here: the delivery's own job, due at the retry time, makes attempts 2 and 3.
   * Without Redis the row is marked unqueued instead, and the sweep queues the job once Redis is back.
   */
  async queueRetry(delivery: { id: string; series: number }, retryInMs: number): Promise<void> {
    try {
      if (await this.redisReady()) {
        const job = this.deliveryJob(delivery);
        await withTimeout(this.deliveryQueue.add(job.name, job.data, { ...job.opts, delay: retryInMs }), ENQUEUE_TIMEOUT_MS, 'queueing a retry in Redis');
        return;
      }
    } catch {
      // left to the sweep, below
    }
    await this.deliveries.markUnqueued([delivery]);
  }

  private deliveryJob(delivery: SeriesToQueue): { name: string; data: DeliveryJob; opts: JobsOptions } {
    return {
      name: 'deliver',
      data: { deliveryId: delivery.id, series: delivery.series },
      opts: { jobId: deliveryJobId(delivery.id, delivery.series), attempts: MAX_ATTEMPTS, backoff: { type: DELIVERY_BACKOFF } },
    };
  }

  /** ioredis would hold commands while disconnected; better to leave the rows for a later pass. */
  async redisReady(): Promise<boolean> {
    const client = (await this.deliveryQueue.backend.client) as unknown as { status: string };
    return client.status === 'ready';
  }

  /**
   * Safety net for jobs Redis lost: a delivery still pending long after its attempt was due is marked
   * unqueued again, so queuePending re-adds its job (a no-op in BullMQ while the job still exists).
   */
  requeueStale(): Promise<number> {
    return this.deliveries.markStaleUnqueued(new Date(this.clock.now().getTime() - STALE_AFTER_MS));
  }
}

/** `promise`, or an error naming `what` after `ms`: a BullMQ command waits for Redis for as long as it is away. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
