import { Column, Entity, PrimaryColumn } from 'typeorm';
import { BIGINT_COLUMN, TIMESTAMP_COLUMN } from '../../../infra/database/columns.js';

/**
 * Quota an upload in progress holds (its share of accounts.storage_reserved), where its bytes stream
 * to, and which server process receives them. Once the file row commits, the reservation holds no
 * bytes but stays, naming the file, until the blob has moved to its final key and the blobs it
 * replaced are deleted: if the process dies in between, the sweeper finishes that work.
 */
@Entity('upload_reservations')
export class UploadReservationEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  @Column({ ...BIGINT_COLUMN, default: 0 }) bytes: number;
  @Column({ type: 'varchar', length: 200, name: 'temp_key' }) tempKey: string;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'updated_at' }) updatedAt: Date;
  /** The receiving process (server_instances.id); NULL for reservations made before processes were tracked. */
  @Column({ type: 'varchar', length: 40, name: 'instance_id', nullable: true }) instanceId: string | null;
  /** Set in the transaction that commits the file: the bytes now belong to it. */
  @Column({ type: 'varchar', length: 40, name: 'file_id', nullable: true }) fileId: string | null;
  /** Blobs the committed upload replaced (overwrite), as JSON; deleted once the new blob is in place. */
  @Column({ type: 'text', name: 'obsolete_blob_keys', nullable: true }) obsoleteBlobKeys: string | null;
}
