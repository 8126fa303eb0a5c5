import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { DeletedWebhookResponse } from '../dto/webhook.response.js';
import { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookEntity } from '../webhook.entity.js';

/** Deletes a webhook with its delivery log; queued attempts find no delivery and are dropped. */
export class DeleteWebhookCommand extends Command<DeletedWebhookResponse> {
  constructor(
    readonly actor: Actor,
    readonly webhookId: string,
  ) {
    super();
  }
}

@CommandHandler(DeleteWebhookCommand)
export class DeleteWebhookHandler implements ICommandHandler<DeleteWebhookCommand> {
  constructor(private readonly transactions: Transactions) {}

  async execute({ actor, webhookId }: DeleteWebhookCommand): Promise<DeletedWebhookResponse> {
    return this.transactions.run(async (tx) => {
      const webhook = await tx.getRepository(WebhookEntity).findOneBy({ id: webhookId, accountId: actor.accountId });
      if (!webhook) throw new NotFound('webhook', webhookId);
      await tx.getRepository(WebhookDeliveryEntity).delete({ webhookId });
      await tx.getRepository(WebhookEntity).delete({ id: webhookId });
      return { id: webhookId, deleted: true };
    });
  }
}
