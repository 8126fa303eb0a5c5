import { describe, expect, it } from 'vitest';
import { WebhookSlots } from './webhook-slots.js';

describe('webhook slots', () => {
  it('leaves a quarter of the attempts in flight to other webhooks, at least one', () => {
    const slots = WebhookSlots.forConcurrency(4);
    for (let i = 0; i < 3; i++) expect(slots.tryAcquire('wh_slow')).toBe(true);
    expect(slots.tryAcquire('wh_slow')).toBe(false);
    expect(slots.tryAcquire('wh_other')).toBe(true);
    expect(slots.total).toBe(4);
  });

  it('counts slots taken by waiting and by not waiting alike, and frees them on release', async () => {
    const slots = new WebhookSlots(1, 50);
    expect(await slots.acquire('wh_a')).toBe(true);
    expect(slots.tryAcquire('wh_a')).toBe(false);
    expect(await slots.acquire('wh_a')).toBe(false);
    const waiting = slots.acquire('wh_a');
    slots.release('wh_a');
    expect(await waiting).toBe(true);
    expect(slots.total).toBe(1);
    slots.release('wh_a');
    expect(slots.total).toBe(0);
    expect(slots.tryAcquire('wh_a')).toBe(true);
  });
});
