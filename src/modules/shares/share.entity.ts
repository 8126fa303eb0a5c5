import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../../infra/database/columns.js';

/**
 * A share link of a file. A link works while it is neither revoked (by its owner), nor
 * invalidated (its file left the active state), nor expired. Analytics survive all three.
 */
@Entity('shares')
export class ShareEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  @Column({ type: 'varchar', length: 40, name: 'file_id' }) fileId: string;
  /** The unguessable part of the public URL (`/s/{token}`), at least 128 random bits. */
  @Column({ type: 'varchar', length: 64 }) token: string;
  /** A slow salted hash (scrypt) of the password; null when the link has none. */
  @Column({ type: 'varchar', length: 255, name: 'password_hash', nullable: true }) passwordHash: string | null;
  @Column({ ...TIMESTAMP_COLUMN, name: 'expires_at', nullable: true }) expiresAt: Date | null;
  @Column({ type: 'varchar', length: 40, name: 'created_by' }) createdBy: string;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'revoked_at', nullable: true }) revokedAt: Date | null;
  /** Set when the file went to trash or was deleted; restoring the file does not clear it. */
  @Column({ ...TIMESTAMP_COLUMN, name: 'invalidated_at', nullable: true }) invalidatedAt: Date | null;
  @Column({ type: 'integer', name: 'access_count', default: 0 }) accessCount: number;
  @Column({ ...TIMESTAMP_COLUMN, name: 'last_accessed_at', nullable: true }) lastAccessedAt: Date | null;

  /** Revoked or invalidated links answer as if they never existed. */
  isWithdrawn(): boolean {
    return this.revokedAt !== null || this.invalidatedAt !== null;
  }

  hasExpired(now: Date): boolean {
    return this.expiresAt !== null && this.expiresAt.getTime() <= now.getTime();
  }

  /** Whether the link works, as `liveShareCondition` (live-shares.ts) says in SQL: neither withdrawn nor expired. */
  isActive(now: Date): boolean {
    return !this.isWithdrawn() && !this.hasExpired(now);
  }
}
