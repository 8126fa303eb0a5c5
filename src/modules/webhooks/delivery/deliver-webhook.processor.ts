import { Logger, OnApplicationBootstrap } from '@nestjs/common';
import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { DelayedError, type Job } from 'bullmq';
import { Clock } from '../../../common/clock.js';
import { AppConfig } from '../../../config/app-config.js';
import { Metrics } from '../../../infra/observability/metrics.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { DELIVERY_BACKOFF, retryDelayMs } from './delivery-schedule.js';
import { AttemptRecorder } from './attempt-recorder.js';
import { DeliveryReader } from './delivery-reader.js';
import { DeliveryTargets } from './delivery-targets.js';
import { succeeded, WebhookSender } from './webhook-sender.js';
import { WebhookSlots } from './webhook-slots.js';

/** How long a job over its webhook's limit waits for a slot before it is turned away. */
const SLOT_WAIT_MS = 50;

export interface DeliveryJob {
  deliveryId: string;
  series: number;
}

/**
 * Delivers webhook events: one job per delivery series, three attempts on the 0/5/25 s schedule.
 * A job only ever acts on a delivery still pending in the same series, so a duplicate job (a replay
 * after a crash, two relays) cannot deliver twice what has already succeeded.
 */
@Processor(QUEUES.webhookDeliveries, {
  settings: { backoffStrategy: (attemptsMade: number, type?: string) => (type === DELIVERY_BACKOFF ? retryDelayMs(attemptsMade) : 0) },
  // A killed worker's jobs are picked up again within about 15 s; attempts still get their full 30 s (the lock is renewed).
  lockDuration: 10_000,
  stalledInterval: 5_000,
  maxStalledCount: 5,
})
export class DeliverWebhookProcessor extends WorkerHost implements OnApplicationBootstrap {
  private readonly logger = new Logger('WebhookDelivery');
  /** One webhook may use all but a quarter of the worker's slots; the rest stay free for the others. */
  private readonly slots: WebhookSlots;
  private lastRedisWarning = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly recorder: AttemptRecorder,
    private readonly sender: WebhookSender,
    private readonly targets: DeliveryTargets,
    private readonly metrics: Metrics,
    private readonly reader: DeliveryReader,
    private readonly clock: Clock,
  ) {
    super();
    const concurrency = config.webhookDeliveryConcurrency;
    this.slots = new WebhookSlots(Math.max(1, concurrency - Math.max(1, Math.floor(concurrency / 4))), SLOT_WAIT_MS);
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.config.webhookDeliveryConcurrency;
  }

  async process(job: Job<DeliveryJob>, token?: string): Promise<string> {
    const { deliveryId, series } = job.data;
    const delivery = await this.reader.read(deliveryId);
    if (!delivery || delivery.series !== series || delivery.status !== 'pending') return 'skipped';
    const webhookId = delivery.webhookId;

    if (!(await this.slots.acquire(webhookId))) {
      // Step aside briefly (not counted as an attempt) and let other receivers use the slot.
      await job.moveToDelayed(Date.now() + 100 + Math.floor(Math.random() * 100), token);
      throw new DelayedError();
    }
    let result;
    try {
      const secrets = this.targets.signingSecrets(webhookId, delivery.webhook, this.clock.now());
      result =
        secrets === null
          ? { startedAt: new Date(), durationMs: 0, responseStatus: null, error: 'the webhook secret cannot be decrypted (SECRETS_ENCRYPTION_KEY changed?)' }
          : await this.sender.send({
              url: delivery.webhook.url,
              secrets,
              deliveryId: delivery.id,
              eventId: delivery.eventId,
              webhookId,
              event: delivery.event,
              body: delivery.body,
            });
    } finally {
      this.slots.release(webhookId);
    }

    const attemptInSeries = job.attemptsMade + 1;
    const recorded = await this.recorder.record({ delivery, attemptInSeries, result });
    this.metrics.deliveryAttemptSeconds.observe(result.durationMs / 1000);
    if (!recorded.recorded) return 'superseded';
    this.metrics.deliveries.inc({ outcome: recorded.status === 'pending' ? 'retrying' : (recorded.status as string) });
    if (recorded.webhookDisabled) this.logger.warn({ webhookId }, 'Webhook deactivated: every delivery failed for 24 hours');
    if (succeeded(result)) return 'succeeded';
    // Failing the job lets BullMQ schedule the next attempt with the webhook backoff (or give up after the third).
    throw new Error(result.error ?? 'delivery failed');
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
