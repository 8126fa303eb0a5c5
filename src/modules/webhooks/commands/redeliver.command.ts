import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { ApiError, NotFound } from '../../../common/errors/api-error.js';
import { isUniqueViolation, Transactions } from '../../../infra/database/transactions.js';
import { DeliverySignal } from '../delivery/delivery-signal.js';
import { DeliveryResponse } from '../dto/delivery.response.js';
import { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookSecretBox } from '../webhook-secret-box.js';
import { WebhookEntity } from '../webhook.entity.js';

/**
 * Starts a new series of attempts (the same 0/5/25 s schedule) for a finished delivery, with the
 * same delivery id and the same body bytes, so a receiver can tell it from a new event.
 */
export class RedeliverCommand extends Command<DeliveryResponse> {
  constructor(
    readonly actor: Actor,
    readonly webhookId: string,
    readonly deliveryId: string,
  ) {
    super();
  }
}

@CommandHandler(RedeliverCommand)
export class RedeliverHandler implements ICommandHandler<RedeliverCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly signal: DeliverySignal,
    private readonly secrets: WebhookSecretBox,
  ) {}

  async execute({ actor, webhookId, deliveryId }: RedeliverCommand): Promise<DeliveryResponse> {
    const delivery = await this.transactions
      .run(async (tx) => {
        const webhook = await tx.getRepository(WebhookEntity).findOneBy({ id: webhookId, accountId: actor.accountId });
        if (!webhook) throw new NotFound('webhook', webhookId);
        webhook.refuseUnlessActive('redeliver');
        // Every attempt of the new series would fail unsigned: refused now, as a test event or a replay is.
        this.secrets.signingSecretOf(webhook);
        const repository = tx.getRepository(WebhookDeliveryEntity);
        const found = await repository.findOneBy({ id: deliveryId, webhookId });
        if (!found) throw new NotFound('delivery', deliveryId);
        if (found.status === 'pending') {
          throw new ApiError(409, 'conflict', `Delivery ${deliveryId} is still being attempted; redeliver it once it has succeeded or failed.`);
        }
        // At most one replay delivery of an event to a webhook is pending at a time (uq_webhook_deliveries_replay_pending).
        if (found.origin === 'replay' && (await repository.existsBy({ eventId: found.eventId, webhookId, origin: 'replay', status: 'pending' }))) {
          throw replayStillPending();
        }
        const nextSeries = { status: 'pending' as const, series: found.series + 1, attemptsBeforeSeries: found.attempts, queuedAt: null, nextAttemptAt: this.clock.now() };
        const updated = await repository.update({ id: deliveryId, series: found.series }, nextSeries);
        if (!updated.affected) throw new ApiError(409, 'conflict', `Delivery ${deliveryId} was redelivered concurrently.`);
        return Object.assign(found, nextSeries);
      })
      .catch((error: unknown) => {
        // A replay of the event, or a redelivery of another of its replay deliveries, committed since the check (PostgreSQL).
        throw isUniqueViolation(error) ? replayStillPending() : error;
      });
    this.signal.nudge();
    return DeliveryResponse.from(delivery);
  }
}

function replayStillPending(): ApiError {
  return new ApiError(409, 'conflict', 'Another replay delivery of this event to this webhook is still being attempted; redeliver this one once that has finished.');
}
