import { Logger, OnApplicationBootstrap } from '@nestjs/common';
import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { CommandBus } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { DelayedError, type Job } from 'bullmq';
import { Repository } from 'typeorm';
import { AppConfig } from '../../../config/app-config.js';
import { Metrics } from '../../../infra/observability/metrics.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { RecordDeliveryAttemptCommand } from '../commands/record-delivery-attempt.command.js';
import { DELIVERY_BACKOFF, retryDelayMs } from '../delivery-schedule.js';
import { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookSecretBox } from '../webhook-secret-box.js';
import { WebhookEntity } from '../webhook.entity.js';
import { succeeded, WebhookSender } from './webhook-sender.js';

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
  /** Attempts in flight per webhook in this process, so one slow receiver cannot take every worker slot. */
  private readonly inFlight = new Map<string, number>();
  private lastRedisWarning = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly commands: CommandBus,
    private readonly sender: WebhookSender,
    private readonly secrets: WebhookSecretBox,
    private readonly metrics: Metrics,
    @InjectRepository(WebhookDeliveryEntity) private readonly deliveries: Repository<WebhookDeliveryEntity>,
    @InjectRepository(WebhookEntity) private readonly webhooks: Repository<WebhookEntity>,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.config.webhookDeliveryConcurrency;
  }

  private get perWebhookLimit(): number {
    return Math.max(1, Math.floor(this.config.webhookDeliveryConcurrency / 2));
  }

  async process(job: Job<DeliveryJob>, token?: string): Promise<string> {
    const { deliveryId, series } = job.data;
    const delivery = await this.deliveries.findOneBy({ id: deliveryId });
    if (!delivery || delivery.series !== series || delivery.status !== 'pending') return 'skipped';
    const webhook = await this.webhooks.findOneBy({ id: delivery.webhookId });
    if (!webhook) return 'skipped';

    const busy = this.inFlight.get(webhook.id) ?? 0;
    if (busy >= this.perWebhookLimit) {
      // Step aside briefly (not counted as an attempt) and let other receivers use the slot.
      await job.moveToDelayed(Date.now() + 100 + Math.floor(Math.random() * 100), token);
      throw new DelayedError();
    }
    this.inFlight.set(webhook.id, busy + 1);
    let result;
    try {
      result = await this.sender.send({
        url: webhook.url,
        secret: this.secrets.open(webhook.secretSealed),
        deliveryId: delivery.id,
        webhookId: webhook.id,
        event: delivery.event,
        body: delivery.body,
      });
    } finally {
      const left = (this.inFlight.get(webhook.id) ?? 1) - 1;
      if (left > 0) this.inFlight.set(webhook.id, left);
      else this.inFlight.delete(webhook.id);
    }

    const attemptInSeries = job.attemptsMade + 1;
    const recorded = await this.commands.execute(new RecordDeliveryAttemptCommand(delivery.id, series, attemptInSeries, result));
    this.metrics.deliveryAttemptSeconds.observe(result.durationMs / 1000);
    if (!recorded.recorded) return 'superseded';
    this.metrics.deliveries.inc({ outcome: recorded.status === 'pending' ? 'retrying' : (recorded.status as string) });
    if (recorded.webhookDisabled) this.logger.warn({ webhookId: webhook.id }, 'Webhook deactivated: every delivery failed for 24 hours');
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
