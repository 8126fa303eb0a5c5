import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { Page, Pagination } from '../../../common/http/envelope.js';
import type { PageRequest } from '../../../common/http/pagination.request.js';
import { WebhookResponse } from '../dto/webhook.response.js';
import { WebhookEntity } from '../webhook.entity.js';

/** The account's webhooks, oldest first, without secrets. */
export class ListWebhooksQuery extends Query<Page<WebhookResponse>> {
  constructor(
    readonly actor: Actor,
    readonly page: PageRequest,
  ) {
    super();
  }
}

@QueryHandler(ListWebhooksQuery)
export class ListWebhooksHandler implements IQueryHandler<ListWebhooksQuery> {
  constructor(
    @InjectRepository(WebhookEntity) private readonly webhooks: Repository<WebhookEntity>,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, page }: ListWebhooksQuery): Promise<Page<WebhookResponse>> {
    const [webhooks, total] = await this.webhooks.findAndCount({
      where: { accountId: actor.accountId },
      order: { createdAt: 'ASC', id: 'ASC' },
      skip: page.offset,
      take: page.per_page,
    });
    const now = this.clock.now();
    return new Page(webhooks.map((webhook) => WebhookResponse.from(webhook, now)), Pagination.of(page.page, page.per_page, total));
  }
}
