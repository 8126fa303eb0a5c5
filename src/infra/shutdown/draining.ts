import { Injectable } from '@nestjs/common';

/**
 * Said once, when the server stops listening on SIGTERM/SIGINT (main.ts), before it waits for the requests in
 * flight: whatever holds a request open on purpose (a long poll) answers now, or the server would wait out its
 * deadline. Nest's shutdown hooks come too late for that: they run only after those requests have finished.
 */
@Injectable()
export class Draining {
  private readonly listeners = new Set<() => void>();
  private begun = false;

  get started(): boolean {
    return this.begun;
  }

  /** Calls `listener` when draining starts (at once if it has); returns the unsubscribe. */
  onStart(listener: () => void): () => void {
    if (this.begun) {
      listener();
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start(): void {
    if (this.begun) return;
    this.begun = true;
    for (const listener of this.listeners) listener();
    this.listeners.clear();
  }
}
