import { Column, Entity, PrimaryColumn } from 'typeorm';
import { BIGINT_COLUMN, TIMESTAMP_COLUMN } from '../../infra/database/columns.js';

export type FileState = 'active' | 'trashed';
export type ScanStatus = 'pending' | 'clean' | 'infected' | 'skipped';
export type FileCategory = 'image' | 'video' | 'audio' | 'document' | 'archive' | 'other';

/**
 * A stored file. Permanently deleted files lose their row (and their blob); active and trashed
 * ones keep it and count toward the account's storage.
 */
@Entity('files')
export class FileEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  /** Parent folder; null in the root. */
  @Column({ type: 'varchar', length: 40, name: 'folder_id', nullable: true }) folderId: string | null;
  /** The folder id, or '' for the root: NULLs never collide in a unique index, '' does. */
  @Column({ type: 'varchar', length: 40, name: 'folder_key' }) folderKey: string;
  @Column({ type: 'varchar', length: 255 }) name: string;
  /** The name lower-cased: names collide case-insensitively, and sort that way. */
  @Column({ type: 'varchar', length: 255, name: 'name_key' }) nameKey: string;
  @Column({ ...BIGINT_COLUMN }) size: number;
  @Column({ type: 'varchar', length: 255, name: 'mime_type' }) mimeType: string;
  @Column({ type: 'varchar', length: 20 }) category: FileCategory;
  @Column({ type: 'varchar', length: 32 }) md5: string;
  /** Where the bytes live in blob storage; derived from ids only, never from the file name. */
  @Column({ type: 'varchar', length: 200, name: 'blob_key' }) blobKey: string;
  @Column({ type: 'varchar', length: 20 }) state: FileState;
  @Column({ type: 'varchar', length: 20, name: 'scan_status', default: 'pending' }) scanStatus: ScanStatus;
  @Column({ type: 'varchar', length: 200, name: 'thumbnail_key', nullable: true }) thumbnailKey: string | null;
  @Column({ type: 'varchar', length: 40, name: 'uploaded_by' }) uploadedBy: string;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'modified_at' }) modifiedAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'deleted_at', nullable: true }) deletedAt: Date | null;
  @Column({ type: 'varchar', length: 40, name: 'deleted_by', nullable: true }) deletedBy: string | null;
  @Column({ ...TIMESTAMP_COLUMN, name: 'recoverable_until', nullable: true }) recoverableUntil: Date | null;
}
