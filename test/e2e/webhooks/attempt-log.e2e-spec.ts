import { CommandBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { newId } from '../../../src/common/ids.js';
import { type FinishedAttempt, RecordDeliveryAttemptsCommand } from '../../../src/modules/webhooks/delivery/record-delivery-attempts.command.js';
import { newDelivery } from '../../../src/modules/webhooks/delivery/new-delivery.js';
import { WebhookDeliveryEntity } from '../../../src/modules/webhooks/webhook-delivery.entity.js';
import { WebhookEntity } from '../../../src/modules/webhooks/webhook.entity.js';
import type { TestAccount } from '../../support/accounts.js';
import type { TestApp } from '../../support/test-app.js';
import { useTestApp } from '../../support/app-fixture.js';

const HOUR = 3600_000;

/**
 * The worker writes finished attempts in batches; a batch must leave the same log, statuses and failure
 * streaks as writing its attempts one at a time.
 */
describe('recording a batch of delivery attempts', () => {
  let t: TestApp;
  let owner: TestAccount;

  useTestApp((started) => ({ t, owner } = started));

  const webhooks = () => t.app.get(DataSource).getRepository(WebhookEntity);
  const deliveries = () => t.app.get(DataSource).getRepository(WebhookDeliveryEntity);

  async function webhookWithDeliveries(count: number, failingSince: Date | null) {
    const created = await t.http().post('/v1/webhooks').set(owner.auth).send({ url: 'http://127.0.0.1:9/hooks', events: ['file.uploaded'] }).expect(201);
    const webhook = await webhooks().findOneByOrFail({ id: created.body.data.id });
    await webhooks().update({ id: webhook.id }, { failingSince });
    const rows = Array.from({ length: count }, (_, i) => ({
      // Marked queued, so the relay leaves them to this test.
      ...newDelivery(webhook, 'secret', { id: newId('evt'), name: 'file.uploaded', occurredAt: new Date(), data: { i } }, new Date()),
      queuedAt: new Date(),
    }));
    await deliveries().insert(rows);
    return { webhook, deliveries: await Promise.all(rows.map((r) => deliveries().findOneByOrFail({ id: r.id! }))) };
  }

  const attempt = (delivery: WebhookDeliveryEntity, status: number | null, attemptInSeries = 1): FinishedAttempt => ({
    delivery,
    attemptInSeries,
    result: { startedAt: new Date(), durationMs: 3, responseStatus: status, error: status === 200 ? null : status === null ? 'connect ECONNREFUSED' : `receiver answered ${status}` },
  });
  const record = (attempts: FinishedAttempt[]) => t.app.get(CommandBus).execute(new RecordDeliveryAttemptsCommand(attempts));

  it('moves each delivery on by its own outcome and skips one that changed since its attempt started', async () => {
    const { deliveries: [first, second, third, stale] } = await webhookWithDeliveries(4, null);
    await deliveries().update({ id: stale.id }, { attempts: 1 });

    const recorded = await record([attempt(first, 200), attempt(second, 503, 1), attempt(third, null, 3), attempt(stale, 200)]);
    expect(recorded.map((r: { recorded: boolean; status: string | null }) => [r.recorded, r.status])).toEqual([
      [true, 'succeeded'],
      [true, 'pending'],
      [true, 'failed'],
      [false, null],
    ]);
    const after = async (id: string) => deliveries().findOneByOrFail({ id });
    expect(await after(first.id)).toMatchObject({ status: 'succeeded', attempts: 1, responseStatus: 200, error: null, nextAttemptAt: null });
    const retrying = await after(second.id);
    expect(retrying).toMatchObject({ status: 'pending', attempts: 1, responseStatus: 503, error: 'receiver answered 503' });
    expect(retrying.nextAttemptAt!.getTime() - retrying.lastAttemptAt!.getTime()).toBeGreaterThanOrEqual(4_900);
    expect(retrying.attemptLog).toEqual([{ attempt: 1, started_at: retrying.lastAttemptAt!.toISOString(), duration_ms: 3, response_status: 503, error: 'receiver answered 503' }]);
    expect(await after(third.id)).toMatchObject({ status: 'failed', attempts: 1, responseStatus: null, error: 'connect ECONNREFUSED', nextAttemptAt: null });
    expect(await after(stale.id)).toMatchObject({ status: 'pending', attempts: 1, attemptLog: [] });

    // The same attempt recorded twice (two workers, one job) is logged once.
    expect((await record([attempt(first, 200)]))[0].recorded).toBe(false);
    expect((await after(first.id)).attemptLog).toHaveLength(1);
  });

  it('deactivates a webhook failing for 24 hours even when a later attempt of the same batch succeeds, and that success ends the streak', async () => {
    const { webhook, deliveries: [failing, succeeding] } = await webhookWithDeliveries(2, new Date(Date.now() - 25 * HOUR));
    const recorded = await record([attempt(failing, 500), attempt(succeeding, 200)]);
    expect(recorded.map((r: { webhookDisabled: boolean }) => r.webhookDisabled)).toEqual([true, false]);
    expect(await webhooks().findOneByOrFail({ id: webhook.id })).toMatchObject({ active: false, disabledReason: 'deliveries_failing', failingSince: null });
  });

  it('starts a streak at the first failure after the last success of a batch, ends it with a batch of successes, and keeps a running one', async () => {
    const fresh = await webhookWithDeliveries(3, null);
    const [a, b, c] = fresh.deliveries;
    const first = attempt(a, 500);
    const firstAfterSuccess = { ...attempt(c, 500), result: { ...attempt(c, 500).result, startedAt: new Date(Date.now() + 1000) } };
    await record([first, attempt(b, 200), firstAfterSuccess]);
    expect((await webhooks().findOneByOrFail({ id: fresh.webhook.id })).failingSince).toEqual(firstAfterSuccess.result.startedAt);

    const recovering = await webhookWithDeliveries(2, new Date(Date.now() - 2 * HOUR));
    const successes = await record(recovering.deliveries.map((d) => attempt(d, 200)));
    expect(successes.map((r) => [r.recorded, r.status])).toEqual([[true, 'succeeded'], [true, 'succeeded']]);
    expect(await webhooks().findOneByOrFail({ id: recovering.webhook.id })).toMatchObject({ active: true, failingSince: null });

    const since = new Date(Date.now() - 2 * HOUR);
    const running = await webhookWithDeliveries(2, since);
    await record(running.deliveries.map((d) => attempt(d, 500)));
    expect(await webhooks().findOneByOrFail({ id: running.webhook.id })).toMatchObject({ active: true, failingSince: since });
  });
});
