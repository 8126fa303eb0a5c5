import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { ApiError } from '../../common/errors/api-error.js';
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
  @Column({ type: 'text', name: 'secret_sealed' }) secretSealed: string;
  /** The secret before the last rotation, still signing (beside the new one) until previousSecretExpiresAt. */
  @Column({ type: 'text', name: 'previous_secret_sealed', nullable: true }) previousSecretSealed: string | null;
  @Column({ ...TIMESTAMP_COLUMN, name: 'previous_secret_expires_at', nullable: true }) previousSecretExpiresAt: Date | null;
  @Column({ type: 'boolean', default: true }) active: boolean;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'updated_at' }) updatedAt: Date;
  /** Since when every delivery attempt has failed; cleared by any success. */
  @Column({ ...TIMESTAMP_COLUMN, name: 'failing_since', nullable: true }) failingSince: Date | null;
  @Column({ type: 'varchar', length: 60, name: 'disabled_reason', nullable: true }) disabledReason: DisabledReason | null;
  @Column({ ...TIMESTAMP_COLUMN, name: 'disabled_at', nullable: true }) disabledAt: Date | null;

  /** When the previous secret stops signing; null when only the current one signs. */
  previousSecretGraceEnd(now: Date): Date | null {
    return previousSecretSigns(this.previousSecretSealed, this.previousSecretExpiresAt, now) ? this.previousSecretExpiresAt : null;
  }

  /**
   * An inactive webhook is sent nothing new, as Stripe and Svix do with a disabled endpoint: no event (the relay takes
   * active webhooks only), no replay, no redelivery. Only a test event, which checks a receiver before it is switched on.
   */
  refuseUnlessActive(what: 'replay' | 'redeliver'): void {
    if (this.active) return;
    throw new ApiError(
      409,
      'conflict',
      `Webhook ${this.id} is inactive${this.disabledReason === 'deliveries_failing' ? ' (turned off after 24 hours of failing deliveries)' : ''}, so nothing is sent to it; ` +
        `activate it (PATCH /v1/webhooks/${this.id} with {"active": true}) and ${what} again.`,
    );
  }

  subscribesTo(event: string): boolean {
    return (this.events as string[]).includes(event);
  }

  /**
   * Turning a webhook on again forgives its failures, so it gets a fresh 24 hours. Only switching it on does: repeating
   * `active: true` beside other changes (as declarative tools send their whole state) kept a failing webhook on for ever.
   */
  activate(now: Date): void {
    if (this.active) return;
    this.active = true;
    this.failingSince = null;
    this.disabledReason = null;
    this.disabledAt = null;
    this.updatedAt = now;
  }

  /**
   * Replaces the signing secret; the one it replaces keeps signing beside it for `graceSeconds`. A
   * secret still in an earlier grace period stops at once: at most two secrets sign.
   */
  rotateSecret(newSecretSealed: string, now: Date, graceSeconds: number): void {
    this.previousSecretSealed = graceSeconds > 0 ? this.secretSealed : null;
    this.previousSecretExpiresAt = graceSeconds > 0 ? new Date(now.getTime() + graceSeconds * 1000) : null;
    this.secretSealed = newSecretSealed;
    this.updatedAt = now;
  }

  deactivate(now: Date): void {
    this.active = false;
    this.updatedAt = now;
  }
}

/** The one rule of a rotation's grace period: the previous secret signs until, not at, its expiry. */
export function previousSecretSigns(sealed: string | null, expiresAt: Date | null, now: Date): boolean {
  return sealed !== null && expiresAt !== null && now.getTime() < expiresAt.getTime();
}
