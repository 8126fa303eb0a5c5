import { createHash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'fss_';

/** A new API key: 32 random bytes (256 bits), URL-safe. Only its hash is stored. */
export function generateApiKey(): { secret: string; hash: string; displayPrefix: string } {
  const secret = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { secret, hash: hashApiKey(secret), displayPrefix: secret.slice(0, 12) };
}

/** Keys carry 256 bits of entropy, so a fast hash is enough: nothing can be guessed from it. */
export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}
