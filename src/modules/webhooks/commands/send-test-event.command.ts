import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { newId } from '../../../common/ids.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { DeliverySignal } from '../delivery/delivery-signal.js';
import { DeliveryResponse } from '../dto/delivery.response.js';
import { newDelivery } from '../delivery/new-delivery.js';
import { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookSecretBox } from '../webhook-secret-box.js';
import { WebhookEntity } from '../webhook.entity.js';

/**
 * Queues a `webhook.test` event to one webhook, whatever it subscribes to and even while it is
 * inactive, so an owner can check a receiver before switching it on.
 */
export class SendTestEventCommand extends Command<DeliveryResponse> {
  constructor(
    readonly actor: Actor,
    readonly webhookId: string,
  ) {
    super();
  }
}

@CommandHandler(SendTestEventCommand)
export class SendTestEventHandler implements ICommandHandler<SendTestEventCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly secrets: WebhookSecretBox,
    private readonly signal: DeliverySignal,
  ) {}

  async execute({ actor, webhookId }: SendTestEventCommand): Promise<DeliveryResponse> {
    const delivery = await this.transactions.run(async (tx) => {
      const webhook = await tx.getRepository(WebhookEntity).findOneBy({ id: webhookId, accountId: actor.accountId });
      if (!webhook) throw new NotFound('webhook', webhookId);
      const now = this.clock.now();
      const event = {
        id: newId('evt'),
        name: 'webhook.test',
        occurredAt: now,
        data: { message: `Test event for webhook ${webhook.id}. If you can read this, deliveries reach your endpoint.` },
      };
      const created = tx.getRepository(WebhookDeliveryEntity).create(newDelivery(webhook, this.secrets.signingSecretOf(webhook), event, now));
      await tx.getRepository(WebhookDeliveryEntity).insert(created);
      return created;
    });
    this.signal.nudge();
    return DeliveryResponse.from(delivery);
  }
}
