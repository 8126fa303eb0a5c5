import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { Job, type Queue } from 'bullmq';
import { Clock } from '../../../common/clock.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { deliveryJobId } from '../webhook-delivery.entity.js';
import type { DeliveryJob } from './deliver-webhook.processor.js';
import { DELIVERY_BACKOFF, MAX_ATTEMPTS } from './delivery-schedule.js';
import { DELIVERY_TIMEOUT_MS } from './webhook-sender.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';

const ENQUEUE_TIMEOUT_MS = 5_000;
/** A pending delivery this long past its due time has lost its job (e.g. Redis restarted without persistence). */
const STALE_AFTER_MS = 2 * 60_000;
/**
 * When the job of a delivery whose first attempt this process is making falls due: after the longest an
 * attempt can take, so it only acts when this process died before recording the attempt.
 */
export const FIRST_ATTEMPT_GUARD_MS = DELIVERY_TIMEOUT_MS + 5_000;

/** A delivery series to queue; `attempts` is the delivery's attempt count now. */
export interface SeriesToQueue {
  id: string;
  series: number;
  attempts: number;
  /** True when this process makes the first attempt itself (FirstAttempts): the job then only stands guard. */
  firstAttemptHere?: boolean;
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
    // A first attempt was made but its guard job was not known to be in Redis: it may have arrived there
    // late (sent once Redis was back), delayed; the retry is due now or soon, so the job is made due now
    // (a job early for its delivery's next attempt waits for it, see the processor).
    const retried = pending.filter((delivery) => Number(delivery.series) === 1 && Number(delivery.attempts) > 0);
    await Promise.all(retried.map((delivery) => this.makeDue(deliveryJobId(delivery.id, delivery.series))));
    return pending.length;
  }

  /**
   * Adds one job per delivery series in one addBulk, then marks the rows queued. Answers false, doing
   * nothing, while Redis is not connected. A job knows the attempts made before its series (none in the
   * first; a redelivery's series is queued before it is attempted), so it counts its series' attempts
   * from the delivery row, whoever made them.
   */
  async queue(deliveries: SeriesToQueue[]): Promise<boolean> {
    const guarded = deliveries.filter((delivery) => delivery.firstAttemptHere);
    try {
      if (!(await this.redisReady())) {
        await this.unguard(guarded);
        return false;
      }
      const jobs = deliveries.map((delivery) => ({
        name: 'deliver',
        data: { deliveryId: delivery.id, series: delivery.series, attemptsBefore: Number(delivery.series) === 1 ? 0 : Number(delivery.attempts) },
        opts: {
          jobId: deliveryJobId(delivery.id, delivery.series),
          attempts: MAX_ATTEMPTS,
          backoff: { type: DELIVERY_BACKOFF },
          ...(delivery.firstAttemptHere ? { delay: FIRST_ATTEMPT_GUARD_MS } : {}),
        },
      }));
      await withTimeout(this.deliveryQueue.addBulk(jobs), ENQUEUE_TIMEOUT_MS, 'queueing deliveries in Redis');
    } catch (error) {
      await this.unguard(guarded).catch(() => undefined);
      throw error;
    }
    // Rows of first attempts were inserted as queued already.
    const unmarked = deliveries.filter((delivery) => !delivery.firstAttemptHere);
    if (unmarked.length > 0) await this.deliveries.markQueued(unmarked, this.clock.now());
    return true;
  }

  /** Deliveries inserted as queued whose guard job could not be added: the sweep queues them (the stale check would, much later). */
  private async unguard(guarded: SeriesToQueue[]): Promise<void> {
    if (guarded.length > 0) await this.deliveries.markUnqueued(guarded);
  }

  /**
   * After a first attempt made here: a success needs its guard job no more; a failure's retry falls due
   * `retryInMs` from now. Best effort: a guard left in place finds the delivery finished (or its retry due)
   * when it runs.
   */
  async afterFirstAttempt(delivery: { id: string; series: number }, retryInMs: number | null): Promise<void> {
    if (!(await this.redisReady())) return;
    const jobId = deliveryJobId(delivery.id, delivery.series);
    if (retryInMs === null) {
      await this.deliveryQueue.remove(jobId);
      return;
    }
    const job = await Job.fromId(this.deliveryQueue, jobId);
    await job?.changeDelay(retryInMs);
  }

  /** Makes a delayed job due now; nothing when it is not delayed (or gone). */
  private async makeDue(jobId: string): Promise<void> {
    const job = await Job.fromId(this.deliveryQueue, jobId);
    if (job && (await job.isDelayed())) await job.promote().catch(() => undefined);
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

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
