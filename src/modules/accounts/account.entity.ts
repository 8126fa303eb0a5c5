import { Column, Entity, PrimaryColumn } from 'typeorm';
import { BIGINT_COLUMN, TIMESTAMP_COLUMN } from '../../infra/database/columns.js';
import { Plan, PLANS, type PlanName } from './plans.js';

/** A customer account: owns users, keys, files and the storage quota. */
@Entity('accounts')
export class AccountEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Column({ type: 'varchar', length: 200 }) name: string;
  @Column({ type: 'varchar', length: 20 }) plan: PlanName;
  /** Overrides the plan's storage quota when set (`--storage-limit`). */
  @Column({ ...BIGINT_COLUMN, name: 'storage_limit_override', nullable: true }) storageLimitOverride: number | null;
  /** Bytes held by active and trashed files; freed only by permanent deletion. */
  @Column({ ...BIGINT_COLUMN, name: 'storage_used', default: 0 }) storageUsed: number;
  /** Bytes promised to uploads still streaming; counted against the quota so concurrent uploads cannot overshoot. */
  @Column({ ...BIGINT_COLUMN, name: 'storage_reserved', default: 0 }) storageReserved: number;
  /** Highest storage.warning threshold (0, 80, 90) already announced, so each upward crossing fires once. */
  @Column({ type: 'integer', name: 'storage_warning_level', default: 0 }) storageWarningLevel: number;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;

  get planLimits(): Plan {
    return PLANS[this.plan];
  }

  get storageLimit(): number {
    return this.storageLimitOverride ?? PLANS[this.plan].storageLimit;
  }
}
