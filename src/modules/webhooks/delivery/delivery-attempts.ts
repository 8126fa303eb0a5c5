import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../../../common/clock.js';
import { Metrics } from '../../../infra/observability/metrics.js';
import { AttemptRecorder } from './attempt-recorder.js';
import type { DeliveryToAttempt } from './delivery-reader.js';
import { DeliveryTargets } from './delivery-targets.js';
import type { RecordedAttempt } from './record-delivery-attempts.command.js';
import { type AttemptResult, WebhookSender } from './webhook-sender.js';

/**
 * One attempt at a delivery, wherever it starts (a queue job, or a first attempt made right after the
 * relay): signed with the webhook's secrets as they are now and sent (while the caller holds a slot of
 * the webhook, see WebhookSlots), then written into the delivery log.
 */
@Injectable()
export class DeliveryAttempts {
  private readonly logger = new Logger('WebhookDelivery');

  constructor(
    private readonly sender: WebhookSender,
    private readonly targets: DeliveryTargets,
    private readonly recorder: AttemptRecorder,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
  ) {}

  send(delivery: DeliveryToAttempt): Promise<AttemptResult> {
    const secrets = this.targets.signingSecrets(delivery.webhookId, delivery.webhook, this.clock.now());
    return secrets === null
      ? Promise.resolve({ startedAt: new Date(), durationMs: 0, responseStatus: null, error: 'the webhook secret cannot be decrypted (SECRETS_ENCRYPTION_KEY changed?)' })
      : this.sender.send({
          url: delivery.webhook.url,
          secrets,
          deliveryId: delivery.id,
          eventId: delivery.eventId,
          webhookId: delivery.webhookId,
          event: delivery.event,
          body: delivery.body,
        });
  }

  /** Answers once the attempt is committed. */
  async record(delivery: DeliveryToAttempt, attemptInSeries: number, result: AttemptResult): Promise<RecordedAttempt> {
    const recorded = await this.recorder.record({ delivery, attemptInSeries, result });
    this.metrics.deliveryAttemptSeconds.observe(result.durationMs / 1000);
    if (recorded.recorded) {
      this.metrics.deliveries.inc({ outcome: recorded.status === 'pending' ? 'retrying' : (recorded.status as string) });
      if (recorded.webhookDisabled) this.logger.warn({ webhookId: delivery.webhookId }, 'Webhook deactivated: every delivery failed for 24 hours');
    }
    return recorded;
  }
}
