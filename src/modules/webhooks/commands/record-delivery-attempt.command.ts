import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Clock } from '../../../common/clock.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { FAILING_WEBHOOK_DISABLE_AFTER_MS, MAX_ATTEMPTS, retryDelayMs } from '../delivery-schedule.js';
import { type AttemptResult, succeeded } from '../delivery/webhook-sender.js';
import { type DeliveryStatus, WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookEntity } from '../webhook.entity.js';

export interface RecordedAttempt {
  /** False when the delivery was deleted, redelivered or already finished meanwhile: nothing was written. */
  recorded: boolean;
  status: DeliveryStatus | null;
  webhookDisabled: boolean;
}

/**
 * Writes one attempt into the delivery log and moves the delivery on (succeeded, failed after the
 * last attempt, or pending with its next attempt time). Also keeps the webhook's failure streak:
 * a webhook that has failed every attempt for 24 hours is deactivated.
 */
export class RecordDeliveryAttemptCommand extends Command<RecordedAttempt> {
  constructor(
    readonly deliveryId: string,
    readonly series: number,
    /** 1, 2 or 3 within the current series. */
    readonly attemptInSeries: number,
    readonly result: AttemptResult,
  ) {
    super();
  }
}

@CommandHandler(RecordDeliveryAttemptCommand)
export class RecordDeliveryAttemptHandler implements ICommandHandler<RecordDeliveryAttemptCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
  ) {}

  async execute({ deliveryId, series, attemptInSeries, result }: RecordDeliveryAttemptCommand): Promise<RecordedAttempt> {
    return this.transactions.run(async (tx) => {
      const deliveries = tx.getRepository(WebhookDeliveryEntity);
      const delivery = await deliveries.findOneBy({ id: deliveryId });
      if (!delivery || delivery.series !== series || delivery.status !== 'pending') return { recorded: false, status: null, webhookDisabled: false };
      const now = this.clock.now();
      const ok = succeeded(result);
      const status: DeliveryStatus = ok ? 'succeeded' : attemptInSeries >= MAX_ATTEMPTS ? 'failed' : 'pending';
      const attemptLog = [
        ...delivery.attemptLog,
        {
          attempt: delivery.attempts + 1,
          started_at: result.startedAt.toISOString(),
          duration_ms: result.durationMs,
          response_status: result.responseStatus,
          error: result.error,
        },
      ];
      // Conditional on the attempt count, so two workers finishing the same attempt cannot both log it.
      const updated = await deliveries.update(
        { id: deliveryId, series, attempts: delivery.attempts, status: 'pending' },
        {
          status,
          attempts: delivery.attempts + 1,
          lastAttemptAt: result.startedAt,
          nextAttemptAt: status === 'pending' ? new Date(now.getTime() + retryDelayMs(attemptInSeries)) : null,
          responseStatus: result.responseStatus,
          error: result.error,
          attemptLog,
        },
      );
      if (!updated.affected) return { recorded: false, status: null, webhookDisabled: false };
      const webhookDisabled = await this.trackFailureStreak(tx.getRepository(WebhookEntity), delivery.webhookId, ok, result.startedAt, now);
      return { recorded: true, status, webhookDisabled };
    });
  }

  private async trackFailureStreak(
    webhooks: import('typeorm').Repository<WebhookEntity>,
    webhookId: string,
    ok: boolean,
    attemptStartedAt: Date,
    now: Date,
  ): Promise<boolean> {
    const column = (name: string) => webhooks.createQueryBuilder().update(WebhookEntity).where('id = :webhookId', { webhookId }).andWhere(name);
    if (ok) {
      await column('failing_since IS NOT NULL').set({ failingSince: null }).execute();
      return false;
    }
    await column('failing_since IS NULL').set({ failingSince: attemptStartedAt }).execute();
    const cutoff = new Date(now.getTime() - FAILING_WEBHOOK_DISABLE_AFTER_MS).toISOString();
    const disabled = await column('active = :active AND failing_since <= :cutoff')
      .setParameters({ active: true, cutoff })
      .set({ active: false, disabledReason: 'deliveries_failing', disabledAt: now, updatedAt: now })
      .execute();
    return (disabled.affected ?? 0) > 0;
  }
}
