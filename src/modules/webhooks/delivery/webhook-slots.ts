/**
 * Attempts in flight per webhook in this process (queue jobs and first attempts alike), so one slow
 * receiver cannot take every slot. A job over the limit waits a moment for a slot of its webhook: a fast
 * receiver frees one within milliseconds, while a slow one keeps them all and its job is turned away
 * (see the processor). First attempts wait for a slot in FirstAttempts, which is told of each release.
 */
/** How long a job over its webhook's limit waits for a slot before it is turned away. */
const SLOT_WAIT_MS = 50;

export class WebhookSlots {
  private readonly inFlight = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();
  private taken = 0;
  private readonly releaseListeners: Array<() => void> = [];

  constructor(
    private readonly limit: number,
    private readonly maxWaitMs: number,
  ) {}

  /** One webhook may use all but a quarter of the process's attempts in flight; the rest stay free for the others. */
  static forConcurrency(concurrency: number): WebhookSlots {
    return new WebhookSlots(Math.max(1, concurrency - Math.max(1, Math.floor(concurrency / 4))), SLOT_WAIT_MS);
  }

  /** Slots taken over all webhooks. */
  get total(): number {
    return this.taken;
  }

  /** Attempts of the webhook in flight now. */
  inFlightOf(webhookId: string): number {
    return this.inFlight.get(webhookId) ?? 0;
  }

  /** Whether the webhook is below its share, so tryAcquire would take a slot for it now. */
  hasRoom(webhookId: string): boolean {
    return this.inFlightOf(webhookId) < this.limit;
  }

  /** Takes a slot of the webhook only if one is free now. */
  tryAcquire(webhookId: string): boolean {
    if (!this.hasRoom(webhookId)) return false;
    this.take(webhookId);
    return true;
  }

  /** Takes a slot of the webhook, waiting up to maxWaitMs for one; false when none came free. */
  async acquire(webhookId: string): Promise<boolean> {
    const deadline = performance.now() + this.maxWaitMs;
    while ((this.inFlight.get(webhookId) ?? 0) >= this.limit) {
      const left = deadline - performance.now();
      if (left <= 0 || !(await this.released(webhookId, left))) return false;
    }
    this.take(webhookId);
    return true;
  }

  /** Calls `listener` after every release (FirstAttempts starts a waiting attempt then). */
  onRelease(listener: () => void): void {
    this.releaseListeners.push(listener);
  }

  release(webhookId: string): void {
    this.taken--;
    const left = (this.inFlight.get(webhookId) ?? 1) - 1;
    if (left > 0) this.inFlight.set(webhookId, left);
    else this.inFlight.delete(webhookId);
    const waiters = this.waiting.get(webhookId);
    const next = waiters?.shift();
    if (waiters && waiters.length === 0) this.waiting.delete(webhookId);
    next?.();
    for (const listener of this.releaseListeners) listener();
  }

  private take(webhookId: string): void {
    this.inFlight.set(webhookId, (this.inFlight.get(webhookId) ?? 0) + 1);
    this.taken++;
  }

  /** Resolves true when a slot of the webhook is released, false after `ms`. */
  private released(webhookId: string, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiters = this.waiting.get(webhookId) ?? [];
      this.waiting.set(webhookId, waiters);
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        const index = waiters.indexOf(wake);
        if (index >= 0) waiters.splice(index, 1);
        if (waiters.length === 0 && this.waiting.get(webhookId) === waiters) this.waiting.delete(webhookId);
        resolve(false);
      }, ms);
      waiters.push(wake);
    });
  }
}
