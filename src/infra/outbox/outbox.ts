import type { EntityManager, QueryRunner } from 'typeorm';
import { newId } from '../../common/ids.js';
import { sqlDialect } from '../database/sql-dialect.js';
import type { DomainEvent, EventName } from './domain-event.js';

/** Records domain events in the outbox inside the caller's transaction. */
export const Outbox = {
  async record(tx: EntityManager, ...events: DomainEvent[]): Promise<void> {
    if (events.length === 0) return;
    // Plain SQL: on every upload, TypeORM's insert builder cost more CPU than the statement itself.
    // Columns as OutboxEventEntity stores them (timestamps as ISO strings); relayed_at and feed_position start NULL.
    const params = sqlDialect(tx).parameters();
    const rows = events.map(
      (event) =>
        `(${params.add(event.id)}, ${params.add(event.accountId)}, ${params.add(event.name)}, ${params.add(JSON.stringify(event.data))}, ${params.add(event.occurredAt.toISOString())})`,
    );
    await tx.query(`INSERT INTO outbox_events (id, account_id, event, payload, occurred_at) VALUES ${rows.join(', ')}`, params.values);
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
