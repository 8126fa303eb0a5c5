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
