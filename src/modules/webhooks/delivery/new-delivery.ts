import { newId } from '../../../common/ids.js';
import type { DeliveryOrigin, WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import type { WebhookEntity } from '../webhook.entity.js';
import { buildDeliveryBody } from './webhook-signature.js';

export interface DeliverableEvent {
  id: string;
  name: string;
  occurredAt: Date;
  data: unknown;
}

/** A fresh delivery of one event to one webhook, its body built and signed once for all attempts. */
export function newDelivery(
  webhook: WebhookEntity,
  secret: string,
  event: DeliverableEvent,
  now: Date,
  origin: DeliveryOrigin = 'event',
): Partial<WebhookDeliveryEntity> {
  return {
    id: newId('dlv'),
    webhookId: webhook.id,
    accountId: webhook.accountId,
    eventId: event.id,
    event: event.name,
    origin,
    body: buildDeliveryBody(secret, { event: event.name, timestamp: event.occurredAt.toISOString(), webhook_id: webhook.id, data: event.data }),
    status: 'pending',
    attempts: 0,
    series: 1,
    createdAt: now,
    lastAttemptAt: null,
    nextAttemptAt: now,
    responseStatus: null,
    error: null,
    attemptLog: [],
    queuedAt: null,
  };
}
