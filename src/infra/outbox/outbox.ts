import type { EntityManager, QueryRunner } from 'typeorm';
import { newId } from '../../common/ids.js';
import { insertRows } from '../database/insert-rows.js';
import type { DomainEvent, EventName } from './domain-event.js';

/** Records domain events in the outbox inside the caller's transaction. */
export const Outbox = {
  async record(tx: EntityManager, ...events: DomainEvent[]): Promise<void> {
    if (events.length === 0) return;
    // Columns as OutboxEventEntity stores them; relayed_at and feed_position start NULL.
    await insertRows(
      tx,
      'outbox_events',
      events.map((event) => ({ id: event.id, account_id: event.accountId, event: event.name, payload: JSON.stringify(event.data), occurred_at: event.occurredAt.toISOString() })),
    );
    // Lets the relay be woken as soon as this transaction commits (see takeOutboxRecorded).
    if (tx.queryRunner) tx.queryRunner.data = { ...tx.queryRunner.data, [RECORDED]: true };
  },
};

const RECORDED = 'outboxEventsRecorded';

/**
 * True when events were recorded in the transaction this query runner just finished; clears the mark,
 * because SQLite reuses one query runner for every transaction.
 */
export function takeOutboxRecorded(queryRunner: QueryRunner | undefined): boolean {
  if (queryRunner?.data?.[RECORDED] !== true) return false;
  queryRunner.data = { ...queryRunner.data, [RECORDED]: false };
  return true;
}

export function domainEvent(name: EventName, accountId: string, occurredAt: Date, data: Record<string, unknown>): DomainEvent {
  return { id: newId('evt'), name, accountId, occurredAt, data };
}
