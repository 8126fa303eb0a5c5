import { randomBytes } from 'node:crypto';

/** 32 random bytes (256 bits), base64url: the unguessable part of a share URL. */
export function generateShareToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Only strings shaped like a generated token are looked up; anything else is simply unknown. */
export function isShareTokenShaped(value: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(value);
}

/** Ids are `prefix_hex`; anything else (a NUL byte, a path) cannot name a row and is refused before any query. */
export const ID_SHAPE = /^[A-Za-z0-9_-]{1,40}$/;
