import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { EntityManager } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { FAILING_WEBHOOK_DISABLE_AFTER_MS, MAX_ATTEMPTS, retryDelayMs } from './delivery-schedule.js';
import { type AttemptResult, succeeded } from './webhook-sender.js';
import type { DeliveryAttempt, DeliveryStatus } from '../webhook-delivery.entity.js';
import { type AttemptChange, WebhookDeliveryRepository } from './webhook-delivery.repository.js';
import { WebhookEntity } from '../webhook.entity.js';

/** One finished attempt, with the delivery as it was read when the attempt started. */
export interface FinishedAttempt {
  delivery: { id: string; webhookId: string; series: number; attempts: number; attemptLog: DeliveryAttempt[] };
  /** 1, 2 or 3 within the current series. */
  attemptInSeries: number;
  result: AttemptResult;
}

export interface RecordedAttempt {
  /** False when the delivery was deleted, redelivered or moved on meanwhile: nothing was written. */
  recorded: boolean;
  status: DeliveryStatus | null;
  /** True on the attempt whose failure deactivated its webhook. */
  webhookDisabled: boolean;
}

/**
 * Writes finished attempts into the delivery log, many in one transaction, and moves each delivery on
 * (succeeded, failed after the last attempt, or pending with its next attempt time). Also keeps each
 * webhook's failure streak: a webhook that has failed every attempt for 24 hours is deactivated.
 * Answers one RecordedAttempt per attempt, in order. Each delivery may appear once per call.
 */
export class RecordDeliveryAttemptsCommand extends Command<RecordedAttempt[]> {
  constructor(readonly attempts: FinishedAttempt[]) {
    super();
  }
}

@CommandHandler(RecordDeliveryAttemptsCommand)
export class RecordDeliveryAttemptsHandler implements ICommandHandler<RecordDeliveryAttemptsCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly deliveries: WebhookDeliveryRepository,
  ) {}

  async execute({ attempts }: RecordDeliveryAttemptsCommand): Promise<RecordedAttempt[]> {
    if (attempts.length === 0) return [];
    const now = this.clock.now();
    const changes = this.changesOf(attempts, now);
    if (this.transactions.dialect.writableCte && attempts.every((a) => succeeded(a.result))) {
      const written = new Set(await this.recordSuccesses(changes));
      return changes.map((change) => ({ recorded: written.has(change.id), status: written.has(change.id) ? change.status : null, webhookDisabled: false }));
    }
    // Ahead of waiting requests: each attempt's job (and its worker slot) is held until this commits.
    return this.transactions.runFirst(async (tx) => {
      const written = new Set(await this.updateDeliveries(tx, changes));
      const recorded = attempts.filter((a) => written.has(a.delivery.id));
      const disabled = await this.trackFailureStreaks(tx, recorded, now);
      return attempts.map((attempt, i) =>
        written.has(attempt.delivery.id)
          ? { recorded: true, status: changes[i].status, webhookDisabled: disabled.get(attempt.delivery.webhookId) === attempt }
          : { recorded: false, status: null, webhookDisabled: false },
      );
    });
  }

  /** Each attempt as the new values of its delivery row (and the attempt count it must still have). */
  private changesOf(attempts: FinishedAttempt[], now: Date): AttemptChange[] {
    return attempts.map(({ delivery, attemptInSeries, result }) => {
      const status: DeliveryStatus = succeeded(result) ? 'succeeded' : attemptInSeries >= MAX_ATTEMPTS ? 'failed' : 'pending';
      const logged: DeliveryAttempt = {
        attempt: delivery.attempts + 1,
        started_at: result.startedAt.toISOString(),
        duration_ms: result.durationMs,
        response_status: result.responseStatus,
        error: result.error,
      };
      return {
        id: delivery.id,
        series: delivery.series,
        previousAttempts: delivery.attempts,
        status,
        attempts: delivery.attempts + 1,
        lastAttemptAt: result.startedAt,
        nextAttemptAt: status === 'pending' ? new Date(now.getTime() + retryDelayMs(attemptInSeries)) : null,
        responseStatus: result.responseStatus,
        error: result.error,
        attemptLog: [...delivery.attemptLog, logged],
      };
    });
  }

  /** One statement for the whole batch; answers the ids of the deliveries it changed. */
  private async updateDeliveries(tx: EntityManager, changes: AttemptChange[]): Promise<string[]> {
    const update = this.deliveries.attemptsUpdate(tx, changes);
    // A structured result, because the drivers shape a plain UPDATE ... RETURNING answer differently.
    const result = await tx.queryRunner!.query(`${update.sql} RETURNING webhook_deliveries.id`, update.parameters, true);
    return (result.records as Array<{ id: string }>).map((row) => row.id);
  }

  /**
   * A batch of successes only, where a WITH clause may write (PostgreSQL): the log and the end of each
   * webhook's failure streak in one statement, atomic by itself, so one round trip instead of a
   * transaction of four. Webhook rows are locked in id order, as in trackFailureStreaks.
   */
  private async recordSuccesses(changes: AttemptChange[]): Promise<string[]> {
    const update = this.deliveries.attemptsUpdate(this.transactions.dataSource.manager, changes);
    const rows: Array<{ id: string }> = await this.transactions.dataSource.query(
      `WITH updated AS (${update.sql} RETURNING webhook_deliveries.id, webhook_deliveries.webhook_id),
       streaks_ended AS (
         UPDATE webhooks SET failing_since = NULL
         WHERE id IN (SELECT id FROM webhooks WHERE id IN (SELECT webhook_id FROM updated) AND failing_since IS NOT NULL ORDER BY id FOR UPDATE)
       )
       SELECT id FROM updated`,
      update.parameters,
    );
    return rows.map((row) => row.id);
  }

  /**
   * Applies each webhook's outcomes in order: a success ends its failure streak, a failure starts one
   * (unless one is running) and deactivates the webhook once the streak is 24 hours old. Within a run
   * of equal outcomes only its first statement (and, for failures, the age check after its last) can
   * change anything. Answers, per deactivated webhook, the attempt that deactivated it.
   */
  private async trackFailureStreaks(tx: EntityManager, recorded: FinishedAttempt[], now: Date): Promise<Map<string, FinishedAttempt>> {
    const byWebhook = new Map<string, FinishedAttempt[]>();
    for (const attempt of recorded) byWebhook.set(attempt.delivery.webhookId, [...(byWebhook.get(attempt.delivery.webhookId) ?? []), attempt]);
    const cutoff = new Date(now.getTime() - FAILING_WEBHOOK_DISABLE_AFTER_MS).toISOString();
    const disabled = new Map<string, FinishedAttempt>();
    // In id order, so concurrent batches (PostgreSQL) lock webhook rows in the same order and cannot deadlock.
    for (const [webhookId, outcomes] of [...byWebhook].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const webhook = (condition: string) =>
        tx.createQueryBuilder().update(WebhookEntity).where('id = :webhookId', { webhookId }).andWhere(condition);
      for (const run of runsOfEqualOutcome(outcomes)) {
        if (succeeded(run[0].result)) {
          await webhook('failing_since IS NOT NULL').set({ failingSince: null }).execute();
          continue;
        }
        await webhook('failing_since IS NULL').set({ failingSince: run[0].result.startedAt }).execute();
        const turnedOff = await webhook('active = :active AND failing_since <= :cutoff')
          .setParameters({ active: true, cutoff })
          .set({ active: false, disabledReason: 'deliveries_failing', disabledAt: now, updatedAt: now })
          .execute();
        if ((turnedOff.affected ?? 0) > 0) disabled.set(webhookId, run[run.length - 1]);
      }
    }
    return disabled;
  }
}

/** Consecutive attempts that all succeeded or all failed, in order. */
function runsOfEqualOutcome(attempts: FinishedAttempt[]): FinishedAttempt[][] {
  const runs: FinishedAttempt[][] = [];
  for (const attempt of attempts) {
    const last = runs[runs.length - 1];
    if (last && succeeded(last[0].result) === succeeded(attempt.result)) last.push(attempt);
    else runs.push([attempt]);
  }
  return runs;
}
