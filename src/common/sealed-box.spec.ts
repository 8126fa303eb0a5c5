import { describe, expect, it } from 'vitest';
import { SealedBox } from './sealed-box.js';

describe('SealedBox', () => {
  it('gives each purpose a key of its own: what one sealed, another cannot open', () => {
    const sealed = new SealedBox('k'.repeat(40), 'idempotent-answers').seal('{"secret":"sk_live_x"}');
    expect(sealed).not.toContain('sk_live_x');
    expect(new SealedBox('k'.repeat(40), 'idempotent-answers').open(sealed)).toBe('{"secret":"sk_live_x"}');
    expect(() => new SealedBox('k'.repeat(40), 'webhook-secrets').open(sealed)).toThrow();
  });
});
