const SIGNATURE_HEADER = 'x-service-signature';

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * Whether a webhook delivery is genuine: its `X-Service-Signature` header must be `sha256=` + the hex HMAC-SHA256
 * of the raw request body, keyed with the webhook's secret. Pass the body exactly as received, before parsing it.
 * The comparison is Web Crypto's HMAC verify, which runs in constant time; works in Node and browsers.
 */
export async function verifyWebhookSignature(rawBody: string | Uint8Array, headers: WebhookHeaders, secret: string): Promise<boolean> {
  const header = readHeader(headers, SIGNATURE_HEADER);
  const match = header ? /^sha256=([0-9a-f]{64})$/.exec(header.trim()) : null;
  if (!match) return false;
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const body = typeof rawBody === 'string' ? encoder.encode(rawBody) : new Uint8Array(rawBody);
  return crypto.subtle.verify('HMAC', key, hexToBytes(match[1]), body);
}

function readHeader(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof Headers !== 'undefined' && headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function hexToBytes(hex: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

const STANDARD_PREFIX = 'whsec_';
/** Canonical standard base64 with padding, as the Standard Webhooks libraries decode it. */
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export interface StandardWebhookOptions {
  /** How far `webhook-timestamp` may be from now, in seconds (default 300, as the Standard Webhooks libraries). */
  toleranceSeconds?: number;
  /** The time to check the timestamp against (default: now). */
  now?: Date;
}

/**
 * Whether a webhook delivery is genuine by its Standard Webhooks headers: one of the `v1,` signatures in
 * `webhook-signature` must be the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{raw body}`, and
 * `webhook-timestamp` within five minutes of now (a captured delivery cannot be replayed later). Give the
 * secret exactly as shown at creation or rotation; several secrets (e.g. the old and the new during a
 * rotation) are accepted as a list. A `whsec_` secret in canonical base64 is keyed by its decoded bytes, any
 * other secret by its UTF-8 bytes, as the service signs (docs/webhooks.md, "Which key signs what").
 * Node and browsers; the comparison is Web Crypto's HMAC verify, in constant time.
 */
export async function verifyStandardWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: StandardWebhookOptions = {},
): Promise<boolean> {
  const id = readHeader(headers, 'webhook-id');
  const timestamp = readHeader(headers, 'webhook-timestamp');
  const signatures = readHeader(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures || !/^\d{1,15}$/.test(timestamp)) return false;
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? 300)) return false;

  const encoder = new TextEncoder();
  const body = typeof rawBody === 'string' ? encoder.encode(rawBody) : new Uint8Array(rawBody);
  const prefix = encoder.encode(`${id}.${timestamp}.`);
  const message = new Uint8Array(prefix.length + body.length);
  message.set(prefix);
  message.set(body, prefix.length);
  const candidates = signatures
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => base64ToBytes(s.slice(3)))
    .filter((s): s is Uint8Array<ArrayBuffer> => s !== null && s.length === 32);
  for (const one of typeof secret === 'string' ? [secret] : secret) {
    const key = await crypto.subtle.importKey('raw', standardKey(one), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
    for (const candidate of candidates) if (await crypto.subtle.verify('HMAC', key, candidate, message)) return true;
  }
  return false;
}

function standardKey(secret: string): Uint8Array<ArrayBuffer> {
  if (secret.startsWith(STANDARD_PREFIX)) {
    const decoded = CANONICAL_BASE64.test(secret.slice(STANDARD_PREFIX.length)) ? base64ToBytes(secret.slice(STANDARD_PREFIX.length)) : null;
    if (decoded && decoded.length >= 24 && decoded.length <= 64) return decoded;
  }
  return new TextEncoder().encode(secret) as Uint8Array<ArrayBuffer>;
}

function base64ToBytes(base64: string): Uint8Array<ArrayBuffer> | null {
  try {
    const binary = atob(base64);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return null;
  }
}
