/**
 * Attempts in flight per webhook in this process, so one slow receiver cannot take every worker slot.
 * A job over the limit waits a moment for a slot of its webhook: a fast receiver frees one within
 * milliseconds, while a slow one keeps them all and its job is turned away (see the processor).
 */
export class WebhookSlots {
  private readonly inFlight = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(
    private readonly limit: number,
    private readonly maxWaitMs: number,
  ) {}

  /** Takes a slot of the webhook, waiting up to maxWaitMs for one; false when none came free. */
  async acquire(webhookId: string): Promise<boolean> {
    const deadline = performance.now() + this.maxWaitMs;
    while ((this.inFlight.get(webhookId) ?? 0) >= this.limit) {
      const left = deadline - performance.now();
      if (left <= 0 || !(await this.released(webhookId, left))) return false;
    }
    this.inFlight.set(webhookId, (this.inFlight.get(webhookId) ?? 0) + 1);
    return true;
  }

  release(webhookId: string): void {
    const left = (this.inFlight.get(webhookId) ?? 1) - 1;
    if (left > 0) this.inFlight.set(webhookId, left);
    else this.inFlight.delete(webhookId);
    const waiters = this.waiting.get(webhookId);
    const next = waiters?.shift();
    if (waiters && waiters.length === 0) this.waiting.delete(webhookId);
    next?.();
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
