import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { InvalidRequest, NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { WebhookResponse } from '../dto/webhook.response.js';
import type { UpdateWebhookRequest } from '../dto/update-webhook.request.js';
import { WebhookEntity } from '../webhook.entity.js';

/** Changes a webhook's events and/or switches it on or off. */
export class UpdateWebhookCommand extends Command<WebhookResponse> {
  constructor(
    readonly actor: Actor,
    readonly webhookId: string,
    readonly request: UpdateWebhookRequest,
  ) {
    super();
  }
}

@CommandHandler(UpdateWebhookCommand)
export class UpdateWebhookHandler implements ICommandHandler<UpdateWebhookCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, webhookId, request }: UpdateWebhookCommand): Promise<WebhookResponse> {
    if (request.events === undefined && request.active === undefined) {
      throw InvalidRequest.fields([{ field: 'events', message: 'give events and/or active' }]);
    }
    return this.transactions.run(async (tx) => {
      const repository = tx.getRepository(WebhookEntity);
      // Locked, so the state this change starts from is the one it saves over: read unlocked, an automatic deactivation
      // committed meanwhile was kept while the answer said `active: true`.
      const webhook = await repository.findOne({ where: { id: webhookId, accountId: actor.accountId }, ...this.transactions.dialect.lockForUpdate<WebhookEntity>() });
      if (!webhook) throw new NotFound('webhook', webhookId);
      const now = this.clock.now();
      if (request.events !== undefined) webhook.events = request.events;
      if (request.active === true) webhook.activate(now);
      if (request.active === false) webhook.deactivate(now);
      webhook.updatedAt = now;
      await repository.save(webhook);
      return WebhookResponse.from(webhook, now);
    });
  }
}
