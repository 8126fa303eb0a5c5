/** An outbox event as relayed: its id, name, account and `data` payload. */
export interface RelayedOutboxEvent {
  id: string;
  name: string;
  accountId: string;
  data: Record<string, unknown>;
}

/**
 * Published on the CQRS event bus after the relay committed a batch of outbox rows as relayed, so work
 * that follows domain events (background media jobs) is done per batch, not per request.
 * At most once per row: a crash right after the relay's commit loses it, and the consumer's own safety
 * net (the stalled-media sweep) covers that.
 */
export class OutboxRelayedEvent {
  constructor(readonly events: RelayedOutboxEvent[]) {}
}
