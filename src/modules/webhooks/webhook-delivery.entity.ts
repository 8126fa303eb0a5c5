import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../../infra/database/columns.js';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';
/** `event`: made by the outbox relay (one per event and webhook); `replay`: made by a webhook replay. */
export type DeliveryOrigin = 'event' | 'replay';

export interface DeliveryAttempt {
  attempt: number;
  started_at: string;
  duration_ms: number;
  response_status: number | null;
  error: string | null;
}

const jsonArray = {
  to: (value: DeliveryAttempt[] | undefined) => JSON.stringify(value ?? []),
  from: (value: string | null) => (value ? (JSON.parse(value) as DeliveryAttempt[]) : []),
};

/**
 * One event for one webhook. The body is built once, when the delivery is created, so every attempt
 * (and every redelivery) sends the same bytes under the same delivery id.
 */
@Entity('webhook_deliveries')
@Index('uq_webhook_deliveries_event', ['eventId', 'webhookId'], { unique: true, where: "origin = 'event'" })
@Index('uq_webhook_deliveries_replay_pending', ['eventId', 'webhookId'], { unique: true, where: "origin = 'replay' AND status = 'pending'" })
@Index('idx_webhook_deliveries_list', ['webhookId', 'createdAt', 'id'])
@Index('idx_webhook_deliveries_unqueued', ['queuedAt', 'createdAt'])
@Index('idx_webhook_deliveries_due', ['status', 'nextAttemptAt'])
@Index('idx_webhook_deliveries_held', ['heldBy'], { where: 'held_by IS NOT NULL' })
export class WebhookDeliveryEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Column({ type: 'varchar', length: 40, name: 'webhook_id' }) webhookId: string;
  @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  /** The outbox event this delivery carries; unique with webhookId per origin, so relaying an event twice adds nothing. */
  @Column({ type: 'varchar', length: 40, name: 'event_id' }) eventId: string;
  @Column({ type: 'varchar', length: 60 }) event: string;
  @Column({ type: 'varchar', length: 10, default: 'event' }) origin: DeliveryOrigin;
  @Column({ type: 'text' }) body: string;
  @Column({ type: 'varchar', length: 12 }) status: DeliveryStatus;
  /** Attempts made over all series. */
  @Column({ type: 'integer', default: 0 }) attempts: number;
  /** 1 for the first series of attempts, +1 for each redelivery; part of the queue job id. */
  @Column({ type: 'integer', default: 1 }) series: number;
  /**
   * Attempts made before the current series (0 in the first), so an attempt's place in its series is counted from
   * the row whoever queued its job. Null only for a redelivery begun before it was recorded: its job carries it.
   */
  @Column({ type: 'integer', name: 'attempts_before_series', nullable: true, default: 0 }) attemptsBeforeSeries: number | null;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'last_attempt_at', nullable: true }) lastAttemptAt: Date | null;
  @Column({ ...TIMESTAMP_COLUMN, name: 'next_attempt_at', nullable: true }) nextAttemptAt: Date | null;
  @Column({ type: 'integer', name: 'response_status', nullable: true }) responseStatus: number | null;
  @Column({ type: 'varchar', length: 500, nullable: true }) error: string | null;
  @Column({ type: 'text', name: 'attempt_log', transformer: jsonArray }) attemptLog: DeliveryAttempt[];
  /** When the current series was handed to the queue; null means it still has to be (e.g. Redis was down). */
  @Column({ ...TIMESTAMP_COLUMN, name: 'queued_at', nullable: true }) queuedAt: Date | null;
  /**
   * The server process (ServerInstance id) making this delivery's first attempt itself, without a queue job (see
   * FirstAttempts); null once the attempt is logged or handed to the queue. Another process takes it over when that
   * process is dead (InstanceHeartbeat).
   */
  @Column({ type: 'varchar', length: 40, name: 'held_by', nullable: true }) heldBy: string | null;
}

/** The BullMQ job id of a delivery series: the delivery id itself, then `<id>-r<series>` for redeliveries. */
export function deliveryJobId(deliveryId: string, series: number): string {
  return series === 1 ? deliveryId : `${deliveryId}-r${series}`;
}
