import { Injectable } from '@nestjs/common';

/**
 * An in-process wake-up call for the delivery dispatcher: fired after a transaction that recorded
 * outbox events (or created deliveries) commits, so events go out within milliseconds instead of
 * waiting for the next poll. Missing a signal costs only latency; the dispatcher also polls.
 */
@Injectable()
export class DeliverySignal {
  private listeners: Array<() => void> = [];

  nudge(): void {
    for (const listener of this.listeners) listener();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }
}
