import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { WebhookResponse } from '../dto/webhook.response.js';
import { WebhookEntity } from '../webhook.entity.js';

export class GetWebhookQuery extends Query<WebhookResponse> {
  constructor(
    readonly actor: Actor,
    readonly webhookId: string,
  ) {
    super();
  }
}

@QueryHandler(GetWebhookQuery)
export class GetWebhookHandler implements IQueryHandler<GetWebhookQuery> {
  constructor(
    @InjectRepository(WebhookEntity) private readonly webhooks: Repository<WebhookEntity>,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, webhookId }: GetWebhookQuery): Promise<WebhookResponse> {
    const webhook = await this.webhooks.findOneBy({ id: webhookId, accountId: actor.accountId });
    if (!webhook) throw new NotFound('webhook', webhookId);
    return WebhookResponse.from(webhook, this.clock.now());
  }
}
