import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../../infra/database/columns.js';
import type { EventName } from '../../infra/outbox/domain-event.js';

export type DisabledReason = 'deliveries_failing';

/** Where an account wants its events sent. The secret is kept sealed (AES-256-GCM), never in the clear. */
@Entity('webhooks')
export class WebhookEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Index('idx_webhooks_account') @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  @Column({ type: 'varchar', length: 2048 }) url: string;
  @Column({ type: 'simple-array' }) events: EventName[];
  @Column({ type: 'varchar', length: 300, name: 'secret_sealed' }) secretSealed: string;
  @Column({ type: 'boolean', default: true }) active: boolean;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'updated_at' }) updatedAt: Date;
  /** Since when every delivery attempt has failed; cleared by any success. */
  @Column({ ...TIMESTAMP_COLUMN, name: 'failing_since', nullable: true }) failingSince: Date | null;
  @Column({ type: 'varchar', length: 60, name: 'disabled_reason', nullable: true }) disabledReason: DisabledReason | null;
  @Column({ ...TIMESTAMP_COLUMN, name: 'disabled_at', nullable: true }) disabledAt: Date | null;

  subscribesTo(event: string): boolean {
    return (this.events as string[]).includes(event);
  }

  /** Turning a webhook on again forgives its failures, so it gets a fresh 24 hours. */
  activate(now: Date): void {
    this.active = true;
    this.failingSince = null;
    this.disabledReason = null;
    this.disabledAt = null;
    this.updatedAt = now;
  }

  deactivate(now: Date): void {
    this.active = false;
    this.updatedAt = now;
  }
}
