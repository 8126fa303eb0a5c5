import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { Page, Pagination } from '../../../common/http/envelope.js';
import { DeliveryResponse } from '../dto/delivery.response.js';
import type { ListDeliveriesRequest } from '../dto/list-deliveries.request.js';
import { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookEntity } from '../webhook.entity.js';

/** A webhook's delivery log, newest first. */
export class ListDeliveriesQuery extends Query<Page<DeliveryResponse>> {
  constructor(
    readonly actor: Actor,
    readonly webhookId: string,
    readonly request: ListDeliveriesRequest,
  ) {
    super();
  }
}

@QueryHandler(ListDeliveriesQuery)
export class ListDeliveriesHandler implements IQueryHandler<ListDeliveriesQuery> {
  constructor(
    @InjectRepository(WebhookEntity) private readonly webhooks: Repository<WebhookEntity>,
    @InjectRepository(WebhookDeliveryEntity) private readonly deliveries: Repository<WebhookDeliveryEntity>,
  ) {}

  async execute({ actor, webhookId, request }: ListDeliveriesQuery): Promise<Page<DeliveryResponse>> {
    const exists = await this.webhooks.existsBy({ id: webhookId, accountId: actor.accountId });
    if (!exists) throw new NotFound('webhook', webhookId);
    const [deliveries, total] = await this.deliveries.findAndCount({
      where: { webhookId, ...(request.status ? { status: request.status } : {}) },
      order: { createdAt: 'DESC', id: 'DESC' },
      skip: request.offset,
      take: request.per_page,
    });
    return new Page(deliveries.map(DeliveryResponse.from), Pagination.of(request.page, request.per_page, total));
  }
}
