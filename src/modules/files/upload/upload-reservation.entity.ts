import { Column, Entity, PrimaryColumn } from 'typeorm';
import { BIGINT_COLUMN, TIMESTAMP_COLUMN } from '../../../infra/database/columns.js';

/** Quota an upload in progress holds (its share of accounts.storage_reserved) and where its bytes stream to. */
@Entity('upload_reservations')
export class UploadReservationEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  @Column({ ...BIGINT_COLUMN, default: 0 }) bytes: number;
  @Column({ type: 'varchar', length: 200, name: 'temp_key' }) tempKey: string;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'updated_at' }) updatedAt: Date;
}
