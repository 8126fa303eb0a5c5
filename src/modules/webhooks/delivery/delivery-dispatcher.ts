import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { In } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { AppConfig, DEVELOPMENT_SECRETS_ENCRYPTION_KEY } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { DeliverySignal } from './delivery-signal.js';
import { DELIVERY_BACKOFF, MAX_ATTEMPTS } from './delivery-schedule.js';
import { jsonRows } from './json-rows.js';
import { newDelivery } from './new-delivery.js';
import { deliveryJobId, WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookSecretBox } from '../webhook-secret-box.js';
import { WebhookEntity } from '../webhook.entity.js';
import type { DeliveryJob } from './deliver-webhook.processor.js';

const BATCH = 500;
const POLL_MS = 50;
const ENQUEUE_TIMEOUT_MS = 5_000;
/** A pending delivery this long past its due time has lost its job (e.g. Redis restarted without persistence). */
const STALE_AFTER_MS = 2 * 60_000;
const STALE_CHECK_EVERY_MS = 30_000;

/**
 * Moves events from the outbox to the delivery queue, in two durable steps:
 *  1. relay: pending outbox rows become one delivery row per subscribed active webhook, and the outbox
 *     rows are marked relayed, in one transaction (rows are claimed with SKIP LOCKED on PostgreSQL, and
 *     (event, webhook) is unique, so two server processes never create a delivery twice);
 *  2. queue: delivery rows not yet queued go to BullMQ with their id as job id, then are marked queued.
 * A crash between any two steps leaves rows that the next pass (in this or another process) picks up;
 * while Redis is down, step 2 waits and deliveries accumulate in the database.
 * It polls every 50 ms (events committed by another process are seen only by polling) and is woken at
 * once after a commit in this process that recorded events. Each step is one set-based statement per batch.
 */
@Injectable()
export class DeliveryDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('DeliveryDispatcher');
  private running = false;
  private nudged = false;
  private wake: (() => void) | null = null;
  private loop: Promise<void> = Promise.resolve();
  private unsubscribe: () => void = () => undefined;
  private lastProblemLog = 0;
  private lastStaleCheck = 0;

  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly secrets: WebhookSecretBox,
    private readonly signal: DeliverySignal,
    private readonly config: AppConfig,
    @InjectQueue(QUEUES.webhookDeliveries) private readonly queue: Queue<DeliveryJob>,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.secretsEncryptionKey === DEVELOPMENT_SECRETS_ENCRYPTION_KEY && this.config.nodeEnv === 'development') {
      this.logger.warn('SECRETS_ENCRYPTION_KEY is not set: webhook secrets are encrypted with the public development key');
    }
    this.unsubscribe = this.signal.subscribe(() => this.nudge());
    this.running = true;
    this.loop = this.run();
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    this.unsubscribe();
    this.wake?.();
    await this.loop;
  }

  nudge(): void {
    this.nudged = true;
    this.wake?.();
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.nudged = false;
      let more = false;
      try {
        const relayed = await this.relayOutbox();
        const queued = await this.queuePending();
        if (Date.now() - this.lastStaleCheck > STALE_CHECK_EVERY_MS) {
          this.lastStaleCheck = Date.now();
          await this.requeueStale();
        }
        more = relayed === BATCH || queued === BATCH;
      } catch (error) {
        this.warn('Could not relay webhook events; retrying', error);
      }
      if (!more && !this.nudged && this.running) await this.sleep(POLL_MS);
      // better-sqlite3 answers synchronously, so without this a busy loop would never let I/O run.
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wake = null;
        resolve();
      }
      this.wake = done;
    });
  }

  /** Step 1: outbox rows into delivery rows. Answers how many outbox rows it relayed. */
  async relayOutbox(): Promise<number> {
    const isSqlite = this.transactions.isSqlite;
    return this.transactions.run(async (tx) => {
      const events: Array<{ id: string; account_id: string; event: string; payload: string; occurred_at: string }> = await tx.query(
        `SELECT id, account_id, event, payload, occurred_at FROM outbox_events WHERE relayed_at IS NULL
         ORDER BY occurred_at, id LIMIT ${BATCH}${isSqlite ? '' : ' FOR UPDATE SKIP LOCKED'}`,
      );
      if (events.length === 0) return 0;

      const accountIds = [...new Set(events.map((e) => e.account_id))];
      const webhooks = await tx.getRepository(WebhookEntity).findBy({ accountId: In(accountIds), active: true });
      const secrets = new Map<string, string | null>();
      const secretOf = (webhook: WebhookEntity): string | null => {
        if (!secrets.has(webhook.id)) secrets.set(webhook.id, this.openSecret(webhook));
        return secrets.get(webhook.id) ?? null;
      };
      const now = this.clock.now();
      const deliveries = events.flatMap((event) => {
        const data = JSON.parse(event.payload) as unknown;
        return webhooks
          .filter((webhook) => webhook.accountId === event.account_id && webhook.subscribesTo(event.event))
          .flatMap((webhook) => {
            const secret = secretOf(webhook);
            if (secret === null) return [];
            return [newDelivery(webhook, secret, { id: event.id, name: event.event, occurredAt: new Date(event.occurred_at), data }, now)];
          });
      });
      // On SQLite a unary plus keeps an index out of a condition: these statements must find each row of the
      // batch by its primary key, not walk every pending row (the whole backlog) once per batch.
      const unindexed = isSqlite ? '+' : '';
      if (deliveries.length > 0) {
        // One statement per batch; an (event, webhook) pair that already has its delivery is skipped.
        const columns = {
          id: 'varchar',
          webhook_id: 'varchar',
          account_id: 'varchar',
          event_id: 'varchar',
          event: 'varchar',
          body: 'text',
          status: 'varchar',
          attempts: 'integer',
          series: 'integer',
          created_at: 'varchar',
          next_attempt_at: 'varchar',
          attempt_log: 'text',
        } as const;
        await tx.query(
          `INSERT INTO webhook_deliveries (${Object.keys(columns).join(', ')})
           SELECT ${Object.keys(columns).map((c) => `v.${c}`).join(', ')} FROM ${jsonRows(isSqlite, columns)} WHERE true ON CONFLICT DO NOTHING`,
          [JSON.stringify(deliveries.map(deliveryRow))],
        );
      }
      await tx.query(
        `UPDATE outbox_events SET relayed_at = ${isSqlite ? '?' : '$1'}
         WHERE id IN (SELECT value FROM ${isSqlite ? 'json_each(?)' : 'jsonb_array_elements_text($2::jsonb)'}) AND ${unindexed}relayed_at IS NULL`,
        [now.toISOString(), JSON.stringify(events.map((e) => e.id))],
      );
      return events.length;
    });
  }

  /** Step 2: delivery rows not yet queued into BullMQ. Answers how many it queued. */
  async queuePending(): Promise<number> {
    // ioredis would hold commands while disconnected; better to leave the rows for a later pass.
    const client = (await this.queue.backend.client) as unknown as { status: string };
    if (client.status !== 'ready') return 0;
    const isSqlite = this.transactions.isSqlite;
    const pending: Array<{ id: string; series: number }> = await this.transactions.dataSource.query(
      // The unqueued rows in order, by idx_webhook_deliveries_unqueued (the plus keeps SQLite off the status index,
      // which would read and sort every pending delivery).
      `SELECT id, series FROM webhook_deliveries WHERE queued_at IS NULL AND ${isSqlite ? '+' : ''}status = 'pending' ORDER BY created_at, id LIMIT ${BATCH}`,
    );
    if (pending.length === 0) return 0;
    const jobs = pending.map((delivery) => ({
      name: 'deliver',
      data: { deliveryId: delivery.id, series: delivery.series },
      opts: { jobId: deliveryJobId(delivery.id, delivery.series), attempts: MAX_ATTEMPTS, backoff: { type: DELIVERY_BACKOFF } },
    }));
    await withTimeout(this.queue.addBulk(jobs), ENQUEUE_TIMEOUT_MS, 'queueing deliveries in Redis');
    const now = this.clock.now().toISOString();
    // Only the series that was queued: a redelivered row waits for its own job.
    await this.transactions.run((tx) =>
      tx.query(
        `UPDATE webhook_deliveries SET queued_at = v.queued_at
         FROM ${jsonRows(isSqlite, { id: 'varchar', series: 'integer', queued_at: 'varchar' })}
         WHERE webhook_deliveries.id = v.id AND webhook_deliveries.series = v.series AND ${isSqlite ? '+' : ''}webhook_deliveries.queued_at IS NULL`,
        [JSON.stringify(pending.map((d) => ({ id: d.id, series: Number(d.series), queued_at: now })))],
      ),
    );
    return pending.length;
  }

  /**
   * Safety net for jobs Redis lost: a delivery still pending long after its attempt was due is marked
   * unqueued again, so step 2 re-adds its job (a no-op in BullMQ while the job still exists).
   */
  async requeueStale(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - STALE_AFTER_MS);
    const result = await this.transactions.run((tx) =>
      tx
        .createQueryBuilder()
        .update(WebhookDeliveryEntity)
        .set({ queuedAt: null })
        .where("status = 'pending' AND next_attempt_at < :cutoff AND queued_at IS NOT NULL", { cutoff: cutoff.toISOString() })
        .execute(),
    );
    return result.affected ?? 0;
  }

  /** A secret sealed under another SECRETS_ENCRYPTION_KEY cannot sign; skip that webhook rather than stall every event. */
  private openSecret(webhook: WebhookEntity): string | null {
    try {
      return this.secrets.open(webhook.secretSealed);
    } catch (error) {
      this.logger.error({ err: error, webhookId: webhook.id }, 'Webhook secret cannot be decrypted (was SECRETS_ENCRYPTION_KEY changed?); event not delivered to it');
      return null;
    }
  }

  private warn(message: string, error: unknown): void {
    if (Date.now() - this.lastProblemLog < 30_000) return;
    this.lastProblemLog = Date.now();
    this.logger.warn({ err: error }, message);
  }
}

/** A new delivery as the columns of its row. */
function deliveryRow(delivery: ReturnType<typeof newDelivery>) {
  return {
    id: delivery.id,
    webhook_id: delivery.webhookId,
    account_id: delivery.accountId,
    event_id: delivery.eventId,
    event: delivery.event,
    body: delivery.body,
    status: delivery.status,
    attempts: delivery.attempts,
    series: delivery.series,
    created_at: delivery.createdAt!.toISOString(),
    next_attempt_at: delivery.nextAttemptAt!.toISOString(),
    attempt_log: '[]',
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
