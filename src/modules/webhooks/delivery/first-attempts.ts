import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { DeliveryAttempts } from './delivery-attempts.js';
import { DeliveryQueuer, FIRST_ATTEMPT_MAX_WAIT_MS } from './delivery-queuer.js';
import type { DeliveryToAttempt } from './delivery-reader.js';
import { retryDelayMs } from './delivery-schedule.js';
import { WebhookSlots } from './webhook-slots.js';

/** First attempts held in this process at most (in flight and waiting for a slot, ~2 KB each); the relay queues the others as jobs. */
const MAX_HELD = 10_000;
/** Held for one webhook at most, so a slow receiver cannot take all the room: a quarter stays for the others, as with slots. */
const MAX_HELD_PER_WEBHOOK = (MAX_HELD * 3) / 4;

/** The guard job of one relay pass's first attempts, and how many of them are not settled yet. */
interface Guard {
  /** The guard job's id; null when Redis did not take it (the rows were then inserted unqueued). */
  jobId: string | null;
  left: number;
  /** False once an attempt ended without being recorded or handed over: the guard then stays, and fires. */
  clean: boolean;
  /** Attempts not started yet; while there are any, the guard is put off every FIRST_ATTEMPT_MAX_WAIT_MS. */
  unstarted: number;
  timer: NodeJS.Timeout | null;
}

interface Held {
  delivery: DeliveryToAttempt;
  guard: Guard;
  done: () => void;
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
 * Nothing is lost: the delivery rows are committed before the attempts, and one BullMQ guard job per relay pass,
 * added before that commit (DeliveryQueuer.addGuard), holds their ids, delayed past the longest an attempt started within FIRST_ATTEMPT_MAX_WAIT_MS can take
 * (FIRST_ATTEMPT_GUARD_MS), and put off again each time that much has passed with attempts still waiting. Once every
 * attempt of the pass is recorded, the guard is removed; a failed attempt gets its own job, due at the usual
 * retry time, for attempts 2 and 3. Killed before that, the process leaves the guard to fire: it queues a job for
 * each delivery still waiting for its first attempt (at least once). So a burst costs two Redis round trips per
 * relay pass, not per delivery. A first attempt needs no Redis: while it is down first attempts still go out,
 * and what needs the queue (retries, deliveries beyond what is held here) waits in the database, unqueued,
 * until it is back.
 */
@Injectable()
export class FirstAttempts implements OnApplicationShutdown {
  private readonly logger = new Logger('WebhookDelivery');
  /** Every delivery held here, waiting or being attempted, settled once recorded or handed over. */
  private readonly held = new Map<string, Promise<void>>();
  /** Deliveries waiting for a slot, per webhook, oldest first. */
  private readonly waiting = new Map<string, Held[]>();
  /** Deliveries held per webhook. */
  private readonly heldPerWebhook = new Map<string, number>();
  private lastProblemLog = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly slots: WebhookSlots,
    private readonly attempts: DeliveryAttempts,
    private readonly queuer: DeliveryQueuer,
  ) {
    slots.onRelease(() => this.startWaiting());
  }

  /** Whether this process holds this delivery's first attempt (waiting for a slot or under way). */
  isAttempting(deliveryId: string): boolean {
    return this.held.has(deliveryId);
  }

  /** The deliveries this process takes for a first attempt here (as many as it may hold); answers their ids. */
  take(deliveries: DeliveryToAttempt[]): Set<string> {
    const taken = new Set<string>();
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

  /** Makes the first attempt at each taken delivery, as slots come free; `guard` is their guard job (see DeliveryQueuer.addGuard). */
  start(deliveries: DeliveryToAttempt[], guard: string | null): void {
    if (deliveries.length === 0) return;
    const shared: Guard = { jobId: guard, left: deliveries.length, clean: true, unstarted: deliveries.length, timer: null };
    for (const delivery of deliveries) {
      let done!: () => void;
      this.held.set(delivery.id, new Promise<void>((resolve) => (done = resolve)));
      this.heldPerWebhook.set(delivery.webhookId, (this.heldPerWebhook.get(delivery.webhookId) ?? 0) + 1);
      const queue = this.waiting.get(delivery.webhookId);
      const held = { delivery, guard: shared, done };
      if (queue) queue.push(held);
      else this.waiting.set(delivery.webhookId, [held]);
    }
    this.startWaiting();
    if (shared.unstarted > 0 && guard !== null) this.putOffWhileWaiting(shared);
  }

  async onApplicationShutdown(): Promise<void> {
    // What still waits goes to jobs of its own now, rather than to its guard in FIRST_ATTEMPT_GUARD_MS.
    await this.handOver([...this.waiting.values()].flat());
    await Promise.all([...this.held.values()]);
  }

  /** Starts waiting attempts while slots are free, webhook by webhook (each webhook's share is kept by the slots). */
  private startWaiting(): void {
    const concurrency = this.config.webhookDeliveryConcurrency;
    for (const [webhookId, queue] of this.waiting) {
      if (this.slots.total >= concurrency) break;
      while (queue.length > 0 && this.slots.total < concurrency && this.slots.tryAcquire(webhookId)) {
        const entry = queue.shift()!;
        if (--entry.guard.unstarted === 0 && entry.guard.timer !== null) clearTimeout(entry.guard.timer);
        void this.attempt(entry);
      }
      if (queue.length === 0) this.waiting.delete(webhookId);
    }
  }

  /**
   * Every FIRST_ATTEMPT_MAX_WAIT_MS while some of the guard's attempts have not started (the slots are busy), its job
   * is put off by FIRST_ATTEMPT_GUARD_MS again, so it never fires (in another process) while they are held here.
   */
  private putOffWhileWaiting(guard: Guard): void {
    guard.timer = setTimeout(() => {
      guard.timer = null;
      if (guard.unstarted === 0) return;
      void this.queuer
        .putOffGuard(guard.jobId!)
        .catch((error: unknown) => this.warn('A guard job could not be put off; it may fire while its attempts wait', error, ''));
      this.putOffWhileWaiting(guard);
    }, FIRST_ATTEMPT_MAX_WAIT_MS);
    guard.timer.unref();
  }

  /** Queues a job due at once for each of these waiting deliveries, which this process then no longer holds. */
  private async handOver(held: Held[]): Promise<void> {
    this.waiting.clear();
    if (held.length === 0) return;
    for (const entry of held) if (entry.guard.timer !== null) clearTimeout(entry.guard.timer);
    let queued = false;
    try {
      queued = await this.queuer.queue(held.map(({ delivery }) => ({ id: delivery.id, series: delivery.series, attempts: delivery.attempts })));
    } catch (error) {
      this.warn('Waiting first delivery attempts could not be queued at shutdown; their guard job takes over', error, held[0].delivery.id);
    }
    for (const entry of held) this.settle(entry, queued);
  }

  private async attempt(entry: Held): Promise<void> {
    const { delivery } = entry;
    let settled = false;
    try {
      let result;
      try {
        result = await this.attempts.send(delivery);
      } finally {
        this.slots.release(delivery.webhookId);
      }
      const recorded = await this.attempts.record(delivery, 1, result);
      // Not recorded: the delivery changed meanwhile (deleted webhook, redelivered); nothing more to do.
      if (recorded.recorded && recorded.status === 'pending') await this.queuer.queueRetry(delivery, retryDelayMs(1));
      settled = true;
    } catch (error) {
      this.warn('A first delivery attempt could not be completed; its guard job takes over', error, delivery.id);
    } finally {
      this.settle(entry, settled);
    }
  }

  /** One delivery is no longer held here; once a pass's are all recorded or handed over, its guard job goes. */
  private settle(entry: Held, settled: boolean): void {
    this.held.delete(entry.delivery.id);
    const webhookId = entry.delivery.webhookId;
    const ofWebhook = (this.heldPerWebhook.get(webhookId) ?? 1) - 1;
    if (ofWebhook > 0) this.heldPerWebhook.set(webhookId, ofWebhook);
    else this.heldPerWebhook.delete(webhookId);
    entry.done();
    const guard = entry.guard;
    if (!settled) guard.clean = false;
    if (--guard.left > 0 || !guard.clean || guard.jobId === null) return;
    // A guard left in place finds every delivery attempted when it fires.
    void this.queuer.removeGuard(guard.jobId).catch(() => undefined);
  }

  private warn(message: string, error: unknown, deliveryId: string): void {
    if (Date.now() - this.lastProblemLog < 30_000) return;
    this.lastProblemLog = Date.now();
    this.logger.warn({ err: error, deliveryId }, message);
  }
}
