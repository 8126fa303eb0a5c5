import { randomBytes, scrypt, type ScryptOptions, timingSafeEqual } from 'node:crypto';

/**
 * scrypt cost parameters for new hashes. N = 2^15, r = 8 needs 32 MiB and tens of milliseconds per
 * guess, which makes an offline attack on a leaked table slow. The parameters travel in the stored
 * string, so they can be raised later without breaking existing links.
 */
const COST = { N: 2 ** 15, r: 8, p: 1 };
const KEY_LENGTH = 32;
const SALT_BYTES = 16;
const FORMAT = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9_-]{16,64})\$([A-Za-z0-9_-]{16,128})$/;

/** The longest password a share link takes; long enough for passphrases, short enough to bound the hashing work. */
export const MAX_SHARE_PASSWORD_LENGTH = 256;

/**
 * What X-Share-Password can carry: HTTP trims spaces and tabs around a header value and forbids control characters
 * in it, so a password that begins or ends with a space or holds one could never be sent by a visitor's program.
 */
export const SHARE_PASSWORD_SHAPE = /^(?:[^\x00-\x20\x7f](?:[^\x00-\x1f\x7f]*[^\x00-\x20\x7f])?)?$/;

function derive(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  // Room for the 128 * N * r bytes scrypt needs, which exceeds node's 32 MiB default at these costs.
  const maxmem = 256 * (options.N ?? 0) * (options.r ?? 0) + 1024 * 1024;
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, keyLength, { ...options, maxmem }, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

/** `scrypt$N$r$p$salt$hash` (base64url), with a fresh random salt per password. */
export async function hashSharePassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, KEY_LENGTH, COST);
  return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** True when `password` matches `stored`; compared in constant time. A malformed stored value never matches. */
export async function verifySharePassword(password: string, stored: string): Promise<boolean> {
  const match = FORMAT.exec(stored);
  if (!match) return false;
  const [, n, r, p, saltText, keyText] = match;
  const options = { N: Number(n), r: Number(r), p: Number(p) };
  // Refuse parameters scrypt cannot take (N a power of two) or that would stall the process.
  if (options.N < 2 || options.N > 2 ** 20 || (options.N & (options.N - 1)) !== 0 || options.r < 1 || options.p < 1 || options.r * options.p > 64) return false;
  const expected = Buffer.from(keyText, 'base64url');
  const actual = await derive(password, Buffer.from(saltText, 'base64url'), expected.length, options);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
