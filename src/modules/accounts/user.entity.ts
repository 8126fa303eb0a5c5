import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../../infra/database/columns.js';

/** A person acting for an account; API keys belong to users. */
@Entity('users')
export class UserEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Index('idx_users_account') @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  @Column({ type: 'varchar', length: 200 }) name: string;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
}
