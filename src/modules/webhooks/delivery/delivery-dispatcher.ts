import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { In, IsNull } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { OutboxEventEntity } from '../../../infra/outbox/outbox-event.entity.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { DeliverySignal } from '../delivery-signal.js';
import { DELIVERY_BACKOFF, MAX_ATTEMPTS } from '../delivery-schedule.js';
import { newDelivery } from '../new-delivery.js';
import { deliveryJobId, WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookSecretBox } from '../webhook-secret-box.js';
import { WebhookEntity } from '../webhook.entity.js';
import type { DeliveryJob } from './deliver-webhook.processor.js';

const BATCH = 500;
const POLL_MS = 150;
const ENQUEUE_TIMEOUT_MS = 5_000;
const INSERT_CHUNK = 100;
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
 * It polls every 150 ms and is woken at once after a commit that recorded events.
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
    @InjectQueue(QUEUES.webhookDeliveries) private readonly queue: Queue<DeliveryJob>,
  ) {}

  onApplicationBootstrap(): void {
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
    return this.transactions.run(async (tx) => {
      let pending = tx
        .getRepository(OutboxEventEntity)
        .createQueryBuilder('event')
        .where('event.relayed_at IS NULL')
        .orderBy('event.occurred_at', 'ASC')
        .addOrderBy('event.id', 'ASC')
        .limit(BATCH);
      if (!this.transactions.isSqlite) pending = pending.setLock('pessimistic_write').setOnLocked('skip_locked');
      const events = await pending.getMany();
      if (events.length === 0) return 0;

      const accountIds = [...new Set(events.map((e) => e.accountId))];
      const webhooks = await tx.getRepository(WebhookEntity).findBy({ accountId: In(accountIds), active: true });
      const secrets = new Map<string, string>();
      const secretOf = (webhook: WebhookEntity) => {
        let secret = secrets.get(webhook.id);
        if (secret === undefined) secrets.set(webhook.id, (secret = this.secrets.open(webhook.secretSealed)));
        return secret;
      };
      const now = this.clock.now();
      const deliveries = events.flatMap((event) => {
        const data = JSON.parse(event.payload) as unknown;
        return webhooks
          .filter((webhook) => webhook.accountId === event.accountId && webhook.subscribesTo(event.event))
          .map((webhook) => newDelivery(webhook, secretOf(webhook), { id: event.id, name: event.event, occurredAt: event.occurredAt, data }, now));
      });
      for (let i = 0; i < deliveries.length; i += INSERT_CHUNK) {
        await tx.createQueryBuilder().insert().into(WebhookDeliveryEntity).values(deliveries.slice(i, i + INSERT_CHUNK)).orIgnore().execute();
      }
      await tx
        .createQueryBuilder()
        .update(OutboxEventEntity)
        .set({ relayedAt: now })
        .where({ id: In(events.map((e) => e.id)), relayedAt: IsNull() })
        .execute();
      return events.length;
    });
  }

  /** Step 2: delivery rows not yet queued into BullMQ. Answers how many it queued. */
  async queuePending(): Promise<number> {
    // ioredis would hold commands while disconnected; better to leave the rows for a later pass.
    const client = (await this.queue.backend.client) as unknown as { status: string };
    if (client.status !== 'ready') return 0;
    const repository = this.transactions.dataSource.getRepository(WebhookDeliveryEntity);
    const pending = await repository.find({
      select: { id: true, series: true },
      where: { queuedAt: IsNull(), status: 'pending' },
      order: { createdAt: 'ASC', id: 'ASC' },
      take: BATCH,
    });
    if (pending.length === 0) return 0;
    const jobs = pending.map((delivery) => ({
      name: 'deliver',
      data: { deliveryId: delivery.id, series: delivery.series },
      opts: { jobId: deliveryJobId(delivery.id, delivery.series), attempts: MAX_ATTEMPTS, backoff: { type: DELIVERY_BACKOFF } },
    }));
    await withTimeout(this.queue.addBulk(jobs), ENQUEUE_TIMEOUT_MS, 'queueing deliveries in Redis');
    const now = this.clock.now();
    for (const series of new Set(pending.map((d) => d.series))) {
      const ids = pending.filter((d) => d.series === series).map((d) => d.id);
      await this.transactions.run((tx) =>
        tx.getRepository(WebhookDeliveryEntity).update({ id: In(ids), series, queuedAt: IsNull() }, { queuedAt: now }),
      );
    }
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

  private warn(message: string, error: unknown): void {
    if (Date.now() - this.lastProblemLog < 30_000) return;
    this.lastProblemLog = Date.now();
    this.logger.warn({ err: error }, message);
  }
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
