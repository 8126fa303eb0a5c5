import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { Job, type JobsOptions, type Queue } from 'bullmq';
import { Clock } from '../../../common/clock.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { deliveryJobId } from '../webhook-delivery.entity.js';
import type { DeliveryJob, GuardJob } from './deliver-webhook.processor.js';
import { DELIVERY_BACKOFF, MAX_ATTEMPTS } from './delivery-schedule.js';
import { DELIVERY_TIMEOUT_MS } from './webhook-sender.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';

type QueueJob = DeliveryJob | GuardJob;

const ENQUEUE_TIMEOUT_MS = 5_000;
/** A pending delivery this long past its due time has lost its job (e.g. Redis restarted without persistence). */
const STALE_AFTER_MS = 2 * 60_000;
/**
 * How long first attempts may wait in this process for free slots (FirstAttempts) before their guard job is put off
 * again.
 */
export const FIRST_ATTEMPT_MAX_WAIT_MS = 2_000;
/**
 * When the guard job of a relay pass's first attempts falls due: after the longest an attempt started within
 * FIRST_ATTEMPT_MAX_WAIT_MS can take, so it only acts when this process died before recording the attempts.
 */
export const FIRST_ATTEMPT_GUARD_MS = FIRST_ATTEMPT_MAX_WAIT_MS + DELIVERY_TIMEOUT_MS + 5_000;
/** The name of a guard job in the delivery queue (the others are 'deliver'). */
export const GUARD_JOB = 'guard';

/** The guard job of the first attempts of one relay pass, named after its first delivery. */
function guardJobId(firstDeliveryId: string): string {
  return `guard-${firstDeliveryId}`;
}

/** A delivery series to queue; `attempts` is the delivery's attempt count now. */
export interface SeriesToQueue {
  id: string;
  series: number;
  attempts: number;
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
    @InjectQueue(QUEUES.webhookDeliveries) private readonly deliveryQueue: Queue<QueueJob>,
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
   * first; a redelivery's series is queued before it is attempted), so it counts its series' attempts from
   * the delivery row, whoever made them.
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
   * Adds the guard job of the deliveries whose first attempt this process is about to make (see FirstAttempts and
   * the processor), delayed past the longest those attempts can take. Called before their rows are inserted, so
   * whenever a row is committed as queued its guard is in Redis already; a guard whose rows never committed finds
   * nothing when it fires. Answers the guard's id, or null when Redis did not take it (the rows then go in unqueued,
   * for the sweep).
   */
  async addGuard(deliveryIds: string[]): Promise<string | null> {
    if (deliveryIds.length === 0) return null;
    const jobId = guardJobId(deliveryIds[0]);
    try {
      if (!(await this.redisReady())) return null;
      const opts: JobsOptions = { jobId, delay: FIRST_ATTEMPT_GUARD_MS, attempts: 5, backoff: { type: 'fixed', delay: 5_000 } };
      await withTimeout(this.deliveryQueue.add(GUARD_JOB, { deliveryIds }, opts), ENQUEUE_TIMEOUT_MS, 'adding a guard job in Redis');
      return jobId;
    } catch {
      return null;
    }
  }

  /**
   * After a failed first attempt made here: the delivery's own job, due at the retry time, makes attempts 2 and 3.
   * Without Redis the row is marked unqueued instead, and the sweep queues the job once Redis is back.
   */
  async queueRetry(delivery: { id: string; series: number }, retryInMs: number): Promise<void> {
    try {
      if (await this.redisReady()) {
        const job = this.deliveryJob({ id: delivery.id, series: delivery.series, attempts: 1 });
        await withTimeout(this.deliveryQueue.add(job.name, job.data, { ...job.opts, delay: retryInMs }), ENQUEUE_TIMEOUT_MS, 'queueing a retry in Redis');
        return;
      }
    } catch {
      // left to the sweep, below
    }
    await this.deliveries.markUnqueued([delivery]);
  }

  /** A guard job whose deliveries have all been attempted and recorded (or handed over): best effort, a guard left in place finds nothing to do. */
  async removeGuard(jobId: string): Promise<void> {
    if (await this.redisReady()) await this.deliveryQueue.remove(jobId);
  }

  /** A guard whose attempts still wait for slots: due FIRST_ATTEMPT_GUARD_MS from now. */
  async putOffGuard(jobId: string): Promise<void> {
    if (!(await this.redisReady())) return;
    const job = await Job.fromId(this.deliveryQueue, jobId);
    if (job && (await job.isDelayed())) await job.changeDelay(FIRST_ATTEMPT_GUARD_MS);
  }

  private deliveryJob(delivery: SeriesToQueue): { name: string; data: DeliveryJob; opts: JobsOptions } {
    return {
      name: 'deliver',
      data: { deliveryId: delivery.id, series: delivery.series, attemptsBefore: Number(delivery.series) === 1 ? 0 : Number(delivery.attempts) },
      opts: { jobId: deliveryJobId(delivery.id, delivery.series), attempts: MAX_ATTEMPTS, backoff: { type: DELIVERY_BACKOFF } },
    };
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
