import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { DeliveryResponse } from '../dto/delivery.response.js';
import { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';

export class GetDeliveryQuery extends Query<DeliveryResponse> {
  constructor(
    readonly actor: Actor,
    readonly webhookId: string,
    readonly deliveryId: string,
  ) {
    super();
  }
}

@QueryHandler(GetDeliveryQuery)
export class GetDeliveryHandler implements IQueryHandler<GetDeliveryQuery> {
  constructor(@InjectRepository(WebhookDeliveryEntity) private readonly deliveries: Repository<WebhookDeliveryEntity>) {}

  async execute({ actor, webhookId, deliveryId }: GetDeliveryQuery): Promise<DeliveryResponse> {
    const delivery = await this.deliveries.findOneBy({ id: deliveryId, webhookId, accountId: actor.accountId });
    if (!delivery) throw new NotFound('delivery', deliveryId);
    return DeliveryResponse.from(delivery);
  }
}
