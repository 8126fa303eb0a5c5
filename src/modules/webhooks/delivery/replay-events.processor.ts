import { setTimeout as sleep } from 'node:timers/promises';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import { DelayedError, type Job } from 'bullmq';
import { Clock } from '../../../common/clock.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { WebhookEntity } from '../webhook.entity.js';
import { DeliverySignal } from './delivery-signal.js';
import { DeliveryTargets } from './delivery-targets.js';
import { FirstAttempts } from './first-attempts.js';
import { newDelivery, readyToAttempt } from './new-delivery.js';
import { replayWindowSql } from './replay-window.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';

export interface ReplayJob {
  webhookId: string;
  since: string;
  until: string;
  /** Which request queued the job, so concurrent requests of the same window tell whose add took. */
  request?: string;
}

/**
 * Events made into replay deliveries per transaction: on SQLite a transaction holds the one connection and
 * the event loop, so a batch stays short enough for API requests to get in between.
 */
const BATCH = 200;
/**
 * The job makes more deliveries only while fewer than this many of its webhook's replay deliveries are pending: it
 * keeps pace with the deliveries rather than running ahead of them, so making rows and sending them do not load the
 * server at once (API p99 154 ms during a 100,000-event replay on SQLite without it). Above it the job steps aside,
 * delayed by BACKLOG_CHECK_MS, so a slow receiver's replay never holds up other webhooks' replays.
 */
const BACKLOG_LIMIT = 2_000;
const BACKLOG_CHECK_MS = 500;

/** Where a replay job has got to: saved as its progress after each batch, so a retried job resumes there. */
interface ReplayProgress {
  queued: number;
  position: { occurredAt: string; id: string };
}

/**
 * Makes the deliveries of a webhook replay (ReplayEventsCommand), BATCH events per transaction in
 * (occurred_at, id) order. Their first attempts start after each batch's commit in this process, as the relay's do
 * (FirstAttempts: no queue job per delivery); those it cannot hold go to the queue (the dispatcher is woken).
 * It keeps at most about BACKLOG_LIMIT of the webhook's replay deliveries pending. Safe to run again after a crash: a
 * retried job resumes after the last batch it saved, and an event with a pending replay delivery is skipped (the
 * unique index refuses a second one).
 */
@Processor(QUEUES.webhookReplays)
export class ReplayEventsProcessor extends WorkerHost {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly targets: DeliveryTargets,
    private readonly deliveries: WebhookDeliveryRepository,
    private readonly signal: DeliverySignal,
    private readonly firstAttempts: FirstAttempts,
  ) {
    super();
  }

  async process(job: Job<ReplayJob>, token?: string): Promise<{ queued: number }> {
    const since = new Date(job.data.since);
    const until = new Date(job.data.until);
    const saved = job.progress as Partial<ReplayProgress> | number;
    let position = typeof saved === 'object' && saved.position ? saved.position : { occurredAt: job.data.since, id: '' };
    let queued = typeof saved === 'object' ? (saved.queued ?? 0) : 0;
    for (;;) {
      if ((await this.deliveries.pendingReplays(job.data.webhookId, BACKLOG_LIMIT)) >= BACKLOG_LIMIT) {
        // Resumed from its saved progress when it falls due (BullMQ's step-job pattern).
        await job.moveToDelayed(Date.now() + BACKLOG_CHECK_MS, token);
        throw new DelayedError();
      }
      const started = performance.now();
      const batch = await this.transactions.run(async (tx) => {
        const webhook = await tx.getRepository(WebhookEntity).findOneBy({ id: job.data.webhookId });
        // Switched off (or deleted) since the request: no more of the window, as the relay makes nothing for it either.
        if (!webhook?.active) return null;
        const secret = this.targets.secretOf(webhook);
        if (!secret) return null;
        const dialect = this.transactions.dialect;
        const params = dialect.parameters();
        const after = `(outbox_events.occurred_at > ${params.add(position.occurredAt)} OR (outbox_events.occurred_at = ${params.add(position.occurredAt)} AND outbox_events.id > ${params.add(position.id)}))`;
        const window = replayWindowSql(dialect, webhook, since, until, params);
        const rows: Array<{ id: string; event: string; payload: string; occurred_at: string }> = await tx.query(
          `SELECT id, event, payload, occurred_at FROM outbox_events WHERE ${after} AND ${window.where} ORDER BY occurred_at, id LIMIT ${BATCH}`,
          params.values,
        );
        const now = this.clock.now();
        const candidates = rows.map((row) =>
          readyToAttempt(
            newDelivery(webhook, secret, { id: row.id, name: row.event, occurredAt: new Date(row.occurred_at), data: JSON.parse(row.payload) as unknown }, now, 'replay'),
            webhook,
          ),
        );
        const held = this.firstAttempts.hold(candidates, now);
        const inserted = await this.deliveries.insertNew(tx, held.rows);
        const created = candidates.filter((delivery) => inserted.has(delivery.id));
        return { rows, created, attemptHere: created.filter((delivery) => held.taken.has(delivery.id)) };
      });
      if (!batch) return { queued };
      queued += batch.created.length;
      this.firstAttempts.start(batch.attemptHere);
      if (batch.created.length > batch.attemptHere.length) this.signal.nudge();
      if (batch.rows.length < BATCH) return { queued };
      const last = batch.rows[batch.rows.length - 1];
      position = { occurredAt: last.occurred_at, id: last.id };
      await job.updateProgress({ queued, position } satisfies ReplayProgress);
      // Pause as long as the batch took, so the job takes at most half the event loop: a request passes through the
      // loop several times (middleware, guards, its queries), and yielding once per batch made each of those wait a
      // batch (API p99 263 ms while 100,000 events were replayed).
      await sleep(performance.now() - started);
    }
  }
}
