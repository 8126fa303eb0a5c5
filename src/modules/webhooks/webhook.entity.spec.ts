import { describe, expect, it } from 'vitest';
import { WebhookEntity } from './webhook.entity.js';

const webhook = (secretSealed = 'sealed-1') => Object.assign(new WebhookEntity(), { secretSealed, previousSecretSealed: null, previousSecretExpiresAt: null });
const at = (iso: string) => new Date(iso);

describe('webhook secret rotation', () => {
  it('keeps the replaced secret signing until, not at, the end of the grace period', () => {
    const w = webhook();
    w.rotateSecret('sealed-2', at('2026-11-21T10:00:00.000Z'), 86_400);
    expect(w).toMatchObject({ secretSealed: 'sealed-2', previousSecretSealed: 'sealed-1', previousSecretExpiresAt: at('2026-11-22T10:00:00.000Z') });
    expect(w.previousSecretGraceEnd(at('2026-11-22T09:59:59.999Z'))).toEqual(at('2026-11-22T10:00:00.000Z'));
    expect(w.previousSecretGraceEnd(at('2026-11-22T10:00:00.000Z'))).toBeNull();
  });

  it('with no grace period, the replaced secret stops at once', () => {
    const w = webhook();
    w.rotateSecret('sealed-2', at('2026-11-21T10:00:00.000Z'), 0);
    expect(w).toMatchObject({ secretSealed: 'sealed-2', previousSecretSealed: null, previousSecretExpiresAt: null });
    expect(w.previousSecretGraceEnd(at('2026-11-21T10:00:00.000Z'))).toBeNull();
  });

  it('a rotation during a grace period drops the oldest secret: at most two sign', () => {
    const w = webhook();
    w.rotateSecret('sealed-2', at('2026-11-21T10:00:00.000Z'), 86_400);
    w.rotateSecret('sealed-3', at('2026-11-21T11:00:00.000Z'), 60);
    expect(w).toMatchObject({ secretSealed: 'sealed-3', previousSecretSealed: 'sealed-2', previousSecretExpiresAt: at('2026-11-21T11:01:00.000Z') });
  });
});
