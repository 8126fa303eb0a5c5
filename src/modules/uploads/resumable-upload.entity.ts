import { Column, Entity, PrimaryColumn } from 'typeorm';
import { BIGINT_COLUMN, TIMESTAMP_COLUMN } from '../../infra/database/columns.js';

/**
 * A resumable (tus) upload. Its id is also the id of its upload_reservations row (the quota it
 * holds, its temporary blob). Once completed it keeps `fileId` until it expires, so a client that
 * missed the last answer learns from HEAD that the upload is done, and completing again is a no-op.
 */
@Entity('resumable_uploads')
export class ResumableUploadEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  /** The file name the upload will take (metadata `name`, else `filename`). */
  @Column({ type: 'varchar', length: 255 }) name: string;
  @Column({ type: 'varchar', length: 40, name: 'folder_id', nullable: true }) folderId: string | null;
  @Column({ type: 'boolean', default: false }) overwrite: boolean;
  /** Upload-Length; null while deferred (Upload-Defer-Length). */
  @Column({ ...BIGINT_COLUMN, nullable: true }) length: number | null;
  /** The client's Upload-Metadata, as JSON, echoed by HEAD. */
  @Column({ type: 'text' }) metadata: string;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
  /** Moves forward with every PATCH: an upload expires when idle this long (TUS_UPLOAD_EXPIRY). */
  @Column({ ...TIMESTAMP_COLUMN, name: 'expires_at' }) expiresAt: Date;
  @Column({ type: 'varchar', length: 40, name: 'file_id', nullable: true }) fileId: string | null;
  /** The MD5 of the first `md5Offset` bytes, as a saved hasher state (base64); null before any byte. */
  @Column({ type: 'text', name: 'md5_state', nullable: true }) md5State: string | null;
  @Column({ ...BIGINT_COLUMN, name: 'md5_offset', default: 0 }) md5Offset: number;
  /** On S3, the multipart upload receiving the bytes. */
  @Column({ type: 'text', name: 'storage_upload_id', nullable: true }) storageUploadId: string | null;
}
