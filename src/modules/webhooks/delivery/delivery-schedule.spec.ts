import { describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS, retryDelayMs } from './delivery-schedule.js';

describe('delivery schedule', () => {
  it('retries 5 s after the first failure and 25 s after the second, three attempts in all', () => {
    expect(MAX_ATTEMPTS).toBe(3);
    expect(retryDelayMs(1)).toBe(5_000);
    expect(retryDelayMs(2)).toBe(25_000);
    expect(retryDelayMs(7)).toBe(25_000);
  });
});
