import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../../infra/database/columns.js';
import type { Scope } from '../../common/auth/scopes.js';

/** An API key. Only the SHA-256 of the secret is stored; the secret itself is shown once. */
@Entity('api_keys')
export class ApiKeyEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Index('idx_api_keys_account') @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  @Column({ type: 'varchar', length: 40, name: 'user_id' }) userId: string;
  @Column({ type: 'varchar', length: 200 }) name: string;
  @Index('uq_api_keys_hash', { unique: true }) @Column({ type: 'varchar', length: 64, name: 'key_hash' }) keyHash: string;
  /** The first characters of the key, so a person can tell keys apart without the secret. */
  @Column({ type: 'varchar', length: 16, name: 'key_prefix' }) keyPrefix: string;
  @Column({ type: 'simple-array' }) scopes: Scope[];
  @Column({ type: 'boolean', default: false }) elevated: boolean;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'last_used_at', nullable: true }) lastUsedAt: Date | null;
  @Column({ ...TIMESTAMP_COLUMN, name: 'revoked_at', nullable: true }) revokedAt: Date | null;
}
