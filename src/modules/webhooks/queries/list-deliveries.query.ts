import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { NotFound } from '../../../common/errors/api-error.js';
import type { Page } from '../../../common/http/envelope.js';
import { type CursorScope, ListCursors } from '../../../common/http/list-cursor.js';
import { keysetAfter, keysetOrderByCondition, type KeysetOrder } from '../../../infra/database/keyset.js';
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

const NEWEST_FIRST: KeysetOrder = { column: 'd.created_at', id: 'd.id', descending: true };

@QueryHandler(ListDeliveriesQuery)
export class ListDeliveriesHandler implements IQueryHandler<ListDeliveriesQuery> {
  constructor(
    @InjectRepository(WebhookEntity) private readonly webhooks: Repository<WebhookEntity>,
    @InjectRepository(WebhookDeliveryEntity) private readonly deliveries: Repository<WebhookDeliveryEntity>,
    private readonly cursors: ListCursors,
  ) {}

  async execute({ actor, webhookId, request }: ListDeliveriesQuery): Promise<Page<DeliveryResponse>> {
    const exists = await this.webhooks.existsBy({ id: webhookId, accountId: actor.accountId });
    if (!exists) throw new NotFound('webhook', webhookId);
    const scope: CursorScope = { list: 'deliveries', accountId: actor.accountId, query: { webhook_id: webhookId, status: request.status } };
    const window = this.cursors.open(request, scope);
    const query = this.deliveries.createQueryBuilder('d').where('d.webhook_id = :webhookId', { webhookId });
    if (request.status) query.andWhere('d.status = :status', { status: request.status });
    const total = await query.getCount();
    if (window.after) query.andWhere(keysetAfter(NEWEST_FIRST, [':afterKey', ':afterId']), { afterKey: window.after[0], afterId: window.after[1] });
    const deliveries = await query.orderBy(keysetOrderByCondition(NEWEST_FIRST)).offset(window.offset).limit(window.limit).getMany();
    return this.cursors.page(window, scope, deliveries, total, (delivery) => [delivery.createdAt.toISOString(), delivery.id], DeliveryResponse.from);
  }
}
