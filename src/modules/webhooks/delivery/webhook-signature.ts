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

const STANDARD_PREFIX = 'whsec_';
/** Canonical standard base64 (with padding), as the Standard Webhooks libraries decode it. */
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The HMAC key of the Standard Webhooks signature for a webhook secret. A secret in the standard form
 * (`whsec_` + canonical base64 of 24 to 64 bytes, what the service generates) is used base64-decoded,
 * exactly as the standard libraries do. Any other secret (one chosen at creation, or a `whsec_` secret
 * generated before this form, which was base64url) is used as its UTF-8 bytes, which those libraries
 * accept as a "raw" key.
 */
export function standardWebhooksKey(secret: string): Buffer {
  if (secret.startsWith(STANDARD_PREFIX)) {
    const encoded = secret.slice(STANDARD_PREFIX.length);
    if (CANONICAL_BASE64.test(encoded)) {
      const key = Buffer.from(encoded, 'base64');
      if (key.length >= 24 && key.length <= 64) return key;
    }
  }
  return Buffer.from(secret, 'utf8');
}

/** One `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` signature of the Standard Webhooks spec. */
export function standardSignature(key: Buffer, messageId: string, timestampSeconds: number, body: string | Buffer): string {
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.`).update(body).digest('base64')}`;
}

/** The headers that sign one attempt: its own timestamp, and one signature per key (newest first, space-separated). */
export interface SignedAttemptHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
  'X-Service-Signature': string;
}

/**
 * Signs one attempt of a delivery. `secrets` are the webhook's signing secrets, newest first: the
 * newest signs `X-Service-Signature`; each of them adds a `v1,` signature to `webhook-signature`
 * (two during a rotation's grace period).
 */
export function signAttempt(secrets: readonly string[], eventId: string, timestampSeconds: number, body: string | Buffer): SignedAttemptHeaders {
  if (secrets.length === 0) throw new Error('a delivery needs at least one signing secret');
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((secret) => standardSignature(standardWebhooksKey(secret), eventId, timestampSeconds, body)).join(' '),
    'X-Service-Signature': sign(secrets[0], body),
  };
}
