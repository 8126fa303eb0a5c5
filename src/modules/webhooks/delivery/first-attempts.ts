import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../../../common/clock.js';
import { AppConfig } from '../../../config/app-config.js';
import { InstanceHeartbeat } from '../../../infra/instances/instance-heartbeat.js';
import { ServerInstance } from '../../../infra/instances/server-instance.js';
import { DeliveryAttempts } from './delivery-attempts.js';
import { DeliveryQueuer } from './delivery-queuer.js';
import { DeliveryReader, type DeliveryToAttempt } from './delivery-reader.js';
import { retryDelayMs } from './delivery-schedule.js';
import type { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';
import { WebhookSlots } from './webhook-slots.js';

/** First attempts held in this process at most (in flight and waiting for a slot, ~2 KB each); the relay queues the others as jobs. */
const MAX_HELD = 10_000;
/** Held for one webhook at most, so a slow receiver cannot take all the room: a quarter stays for the others, as with slots. */
const MAX_HELD_PER_WEBHOOK = (MAX_HELD * 3) / 4;

interface Held {
  delivery: DeliveryToAttempt;
  done: () => void;
  /** Set when it had to wait for a slot: its webhook may have been deleted or its secret rotated meanwhile. */
  waited: boolean;
}

/**
 * Makes the first attempt of a new delivery in the process that relayed it, straight after the relay's
 * commit, instead of waiting for the queue worker to fetch its job: the worker fetches jobs one Redis
 * round trip at a time, and a process busy with requests turns each round trip into a turn of its event
 * loop (tens of milliseconds), so under load jobs waited seconds in Redis.
 *
 * A delivery without a free slot (WEBHOOK_DELIVERY_CONCURRENCY, and the share of one webhook, see WebhookSlots)
 * waits here for one, in order per webhook, instead of going through the queue (which would wait for the same
 * slots, at three Redis round trips per delivery). Up to MAX_HELD are held (three quarters of them for one
 * webhook at most); the relay queues the rest as jobs, due at once.
 *
 * Nothing is lost, and no Redis round trip is spent on a first attempt: the relay inserts the rows of the
 * deliveries taken here as held by this process (`held_by`, its ServerInstance id) in the same commit, and logging
 * the attempt lets go of the row; a failed first attempt gets its delivery's job, due at the usual retry time, for
 * attempts 2 and 3. Once this process is dead (no heartbeat for 3 beats, see InstanceHeartbeat), any other process
 * takes back the rows it still held (releaseAbandoned) and queues them. A row this process holds without holding the
 * attempt any more (its logging failed) is let go of by the same check. While Redis is down first attempts still go
 * out; what needs the queue (retries, deliveries beyond what is held here) waits in the database, unqueued, until it
 * is back.
 */
@Injectable()
export class FirstAttempts implements BeforeApplicationShutdown {
  private readonly logger = new Logger('WebhookDelivery');
  /** Every delivery held here, waiting or being attempted, settled once recorded or handed over. */
  private readonly held = new Map<string, Promise<void>>();
  /** Deliveries waiting for a slot, per webhook, oldest first. */
  private readonly waiting = new Map<string, Held[]>();
  /** Deliveries held per webhook. */
  private readonly heldPerWebhook = new Map<string, number>();
  /** Set once the process stops: new deliveries then go to the queue. */
  private closing = false;
  private lastProblemLog = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly instance: ServerInstance,
    private readonly slots: WebhookSlots,
    private readonly attempts: DeliveryAttempts,
    private readonly queuer: DeliveryQueuer,
    private readonly deliveries: WebhookDeliveryRepository,
    private readonly reader: DeliveryReader,
  ) {
    slots.onRelease(() => this.startWaiting());
  }

  /** The id the rows of deliveries taken here are held by. */
  private get holder(): string {
    return this.instance.id;
  }

  /** Whether this process holds this delivery's first attempt (waiting for a slot or under way). */
  isAttempting(deliveryId: string): boolean {
    return this.held.has(deliveryId);
  }

  /**
   * The rows to insert for these new deliveries: those this process takes for a first attempt here (as many as it may
   * hold, answered as `taken`) queued and held by it, so no sweep (of any process) queues them meanwhile and another
   * process takes them back if this one dies before logging their attempts; the others unqueued, for the sweep.
   * Start the taken ones that were inserted once the rows are committed.
   */
  hold<T extends DeliveryToAttempt>(deliveries: T[], now: Date): { rows: Array<T & Pick<WebhookDeliveryEntity, 'queuedAt' | 'heldBy'>>; taken: Set<string> } {
    const taken = this.take(deliveries);
    const rows = deliveries.map((delivery) =>
      taken.has(delivery.id) ? { ...delivery, queuedAt: now, heldBy: this.holder } : { ...delivery, queuedAt: null, heldBy: null },
    );
    return { rows, taken };
  }

  /** The deliveries this process takes for a first attempt here (as many as it may hold); answers their ids. */
  private take(deliveries: DeliveryToAttempt[]): Set<string> {
    const taken = new Set<string>();
    if (this.closing) return taken;
    const perWebhook = new Map<string, number>();
    for (const delivery of deliveries) {
      if (this.held.size + taken.size >= MAX_HELD) break;
      const ofWebhook = perWebhook.get(delivery.webhookId) ?? this.heldPerWebhook.get(delivery.webhookId) ?? 0;
      if (ofWebhook >= MAX_HELD_PER_WEBHOOK) continue;
      perWebhook.set(delivery.webhookId, ofWebhook + 1);
      taken.add(delivery.id);
    }
    return taken;
  }

  /** Makes the first attempt at each taken delivery (committed as held by this process), as slots come free. */
  start(deliveries: DeliveryToAttempt[]): void {
    for (const delivery of deliveries) {
      let done!: () => void;
      this.held.set(delivery.id, new Promise<void>((resolve) => (done = resolve)));
      this.heldPerWebhook.set(delivery.webhookId, (this.heldPerWebhook.get(delivery.webhookId) ?? 0) + 1);
      const queue = this.waiting.get(delivery.webhookId);
      const held = { delivery, done, waited: false };
      if (queue) queue.push(held);
      else this.waiting.set(delivery.webhookId, [held]);
    }
    this.startWaiting();
    // Those not started just now wait for a slot, as long as a slow receiver takes.
    for (const queue of this.waiting.values()) for (const held of queue) held.waited = true;
  }

  /**
   * Lets go of held rows no live process attempts: those of dead processes (held since before they died), and this
   * process's own that it no longer holds (their attempt could not be logged; only rows older than a heartbeat, so
   * never those of a relay pass not yet committed or started). They go to the sweep, unqueued. Answers how many.
   */
  async releaseAbandoned(): Promise<number> {
    const now = this.clock.now();
    const ofDead = await this.deliveries.releaseHeldByDead(InstanceHeartbeat.deadBefore(now, this.config.instanceHeartbeatMs));
    const heldSince = new Date(now.getTime() - this.config.instanceHeartbeatMs);
    const ownLost = (await this.deliveries.heldBy(this.holder, heldSince)).filter((delivery) => !this.held.has(delivery.id));
    await this.deliveries.release(this.holder, ownLost, false);
    return ofDead + ownLost.length;
  }

  /**
   * Before this process's heartbeat row goes (InstanceHeartbeat.onApplicationShutdown): what still waits goes to jobs
   * of its own, and the attempts under way finish, so no other process takes over a delivery this one still attempts.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    await this.handOver([...this.waiting.values()].flat());
    await Promise.all([...this.held.values()]);
  }

  /**
   * Starts waiting attempts while slots are free, each free slot going to the waiting webhook with the fewest attempts
   * in flight (each webhook's share is kept by the slots). Handed out webhook by webhook instead, every slot freed by a
   * slow receiver went back to the first webhooks still under their share, and a webhook behind two slow receivers'
   * backlogs waited as long as those lasted.
   */
  private startWaiting(): void {
    const concurrency = this.config.webhookDeliveryConcurrency;
    while (this.slots.total < concurrency) {
      let fewest: string | null = null;
      for (const webhookId of this.waiting.keys()) {
        // A webhook over its share waits for one of its own attempts to end.
        if (!this.slots.hasRoom(webhookId)) continue;
        if (fewest === null || this.slots.inFlightOf(webhookId) < this.slots.inFlightOf(fewest)) fewest = webhookId;
        if (this.slots.inFlightOf(fewest) === 0) break;
      }
      if (fewest === null || !this.slots.tryAcquire(fewest)) return;
      const queue = this.waiting.get(fewest)!;
      void this.attempt(queue.shift()!);
      if (queue.length === 0) this.waiting.delete(fewest);
    }
  }

  /** Queues a job due at once for each of these waiting deliveries, which this process then no longer holds. */
  private async handOver(held: Held[]): Promise<void> {
    this.waiting.clear();
    if (held.length === 0) return;
    // No longer held here before their jobs exist, so a worker that fetches one at once attempts it rather than
    // putting it off as being attempted here.
    for (const entry of held) this.settle(entry);
    const deliveries = held.map(({ delivery }) => ({ id: delivery.id, series: delivery.series }));
    try {
      const queued = await this.queuer.queue(deliveries);
      await this.deliveries.release(this.holder, deliveries, queued);
    } catch (error) {
      this.warn('Waiting first delivery attempts could not be handed over at shutdown; another process takes them over', error, held[0].delivery.id);
    }
  }

  private async attempt(entry: Held): Promise<void> {
    let delivery = entry.delivery;
    try {
      let result;
      try {
        if (entry.waited) {
          // Read again, as a queue job would: a deleted webhook gets nothing more, a rotated secret signs at once.
          const current = await this.reader.read(delivery.id);
          // Gone, or attempted meanwhile (a process that took this one for dead took its row back): not ours any more.
          if (!current || current.series !== delivery.series || current.status !== 'pending' || current.attempts !== delivery.attempts) return;
          delivery = current;
        }
        result = await this.attempts.send(delivery);
      } finally {
        this.slots.release(delivery.webhookId);
      }
      const recorded = await this.attempts.record(delivery, 1, result);
      // Not recorded: the delivery changed meanwhile (deleted webhook, redelivered); nothing more to do.
      if (recorded.recorded && recorded.status === 'pending') await this.queuer.queueRetry(delivery, retryDelayMs(1));
    } catch (error) {
      this.warn('A first delivery attempt could not be completed; it is queued again shortly', error, delivery.id);
    } finally {
      this.settle(entry);
    }
  }

  /** One delivery is no longer held here (releaseAbandoned lets go of its row if logging it did not). */
  private settle(entry: Held): void {
    this.held.delete(entry.delivery.id);
    const webhookId = entry.delivery.webhookId;
    const ofWebhook = (this.heldPerWebhook.get(webhookId) ?? 1) - 1;
    if (ofWebhook > 0) this.heldPerWebhook.set(webhookId, ofWebhook);
    else this.heldPerWebhook.delete(webhookId);
    entry.done();
  }

  private warn(message: string, error: unknown, deliveryId: string): void {
    if (Date.now() - this.lastProblemLog < 30_000) return;
    this.lastProblemLog = Date.now();
    this.logger.warn({ err: error, deliveryId }, message);
  }
}
