import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/app-config.js';
import { InvalidRequest } from '../../common/errors/api-error.js';
import { EventFeedCursor } from './event-feed-cursor.js';

const cursors = (secret = 'a'.repeat(64)) => new EventFeedCursor(loadConfig({ URL_SIGNING_SECRET: secret }));

describe('EventFeedCursor', () => {
  it('round-trips positions from 0 to 2^53 - 1 for the account it was issued to', () => {
    for (const position of [0, 1, 35, 36, 1_000_000, Number.MAX_SAFE_INTEGER]) {
      expect(cursors().decode('acc_1', cursors().encode('acc_1', position))).toBe(position);
    }
  });

  it('is opaque text safe in a query string', () => {
    expect(cursors().encode('acc_1', 123_456)).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
  });

  it.each([
    ['another account', (c: string) => ['acc_2', c]],
    ['an altered position', (c: string) => ['acc_1', c.replace(/^[0-9a-z]+/, (p) => (parseInt(p, 36) + 1).toString(36))]],
    ['an altered signature', (c: string) => ['acc_1', c.slice(0, -1) + (c.endsWith('A') ? 'B' : 'A')]],
    ['garbage', () => ['acc_1', 'not-a-cursor']],
    ['an empty string', () => ['acc_1', '']],
    ['a position beyond 2^53', () => ['acc_1', `${'z'.repeat(12)}.${'A'.repeat(22)}`]],
    ['its position respelled with a leading zero', (c: string) => ['acc_1', `0${c}`]],
  ])('refuses %s with invalid_request on `after`', (_, make) => {
    const [account, cursor] = make(cursors().encode('acc_1', 42));
    expect(() => cursors().decode(account, cursor)).toThrow(InvalidRequest);
  });

  it('refuses a cursor signed with another URL_SIGNING_SECRET', () => {
    expect(() => cursors('b'.repeat(64)).decode('acc_1', cursors().encode('acc_1', 42))).toThrow(InvalidRequest);
  });
});
