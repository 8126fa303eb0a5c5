import { Column, Entity, PrimaryColumn } from 'typeorm';
import { BIGINT_COLUMN, TIMESTAMP_COLUMN } from '../database/columns.js';

/**
 * A domain event written in the same transaction as the change that caused it. The relay moves
 * rows without `relayed_at` into the delivery queue, so events outlive a Redis outage or a crash.
 */
@Entity('outbox_events')
export class OutboxEventEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  @Column({ type: 'varchar', length: 60 }) event: string;
  /** JSON of the event's `data`. */
  @Column({ type: 'text' }) payload: string;
  @Column({ ...TIMESTAMP_COLUMN, name: 'occurred_at' }) occurredAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'relayed_at', nullable: true }) relayedAt: Date | null;
  /** The event's place in the event feed, stamped after its transaction committed (EventSequencer); null until then. */
  @Column({ ...BIGINT_COLUMN, name: 'feed_position', nullable: true }) feedPosition: number | null;
}
