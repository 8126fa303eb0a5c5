import { newId } from '../../../common/ids.js';
import type { DeliveryOrigin, WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import type { WebhookEntity } from '../webhook.entity.js';
import type { DeliveryToAttempt } from './delivery-reader.js';
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

/** A delivery just created, with the webhook it was made for (its url and secrets as they are now), ready to attempt. */
export function readyToAttempt(delivery: Partial<WebhookDeliveryEntity>, webhook: WebhookEntity): DeliveryToAttempt & Partial<WebhookDeliveryEntity> {
  const { url, secretSealed, previousSecretSealed, previousSecretExpiresAt } = webhook;
  return { ...(delivery as WebhookDeliveryEntity), webhook: { url, secretSealed, previousSecretSealed, previousSecretExpiresAt } };
}
