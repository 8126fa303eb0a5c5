import { createHmac } from 'node:crypto';

/** `sha256=` followed by the lowercase hex HMAC-SHA256 of `payload` keyed with the webhook secret. */
export function sign(secret: string, payload: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(payload).digest('hex')}`;
}

export interface WebhookEnvelope {
  event: string;
  timestamp: string;
  webhook_id: string;
  data: unknown;
}

/**
 * The delivery body, built in two steps (docs/webhooks.md, "Verifying the signature"): the in-body `signature` signs the JSON of the
 * envelope without it; the `X-Service-Signature` header then signs the exact bytes of this body.
 * Keys are in the order event, timestamp, webhook_id, data, signature.
 */
export function buildDeliveryBody(secret: string, envelope: WebhookEnvelope): string {
  const inner = JSON.stringify({ event: envelope.event, timestamp: envelope.timestamp, webhook_id: envelope.webhook_id, data: envelope.data });
  return JSON.stringify({
    event: envelope.event,
    timestamp: envelope.timestamp,
    webhook_id: envelope.webhook_id,
    data: envelope.data,
    signature: sign(secret, inner),
  });
}
