import { timingSafeEqual } from 'node:crypto';

/**
 * Whether `given` is exactly the base64url text of the MAC `expected`, compared in constant time. Compared as text,
 * not as decoded bytes: a decoder ignores the spare bits of the last character (and stray characters), so several
 * strings decode to one MAC, and a token altered there would still be accepted.
 */
export function matchesBase64urlMac(given: string, expected: Buffer): boolean {
  const issued = Buffer.from(expected.toString('base64url'));
  const received = Buffer.from(given);
  return received.length === issued.length && timingSafeEqual(received, issued);
}
