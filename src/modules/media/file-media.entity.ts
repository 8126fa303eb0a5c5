import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../../infra/database/columns.js';

/**
 * pending: a job is queued; ready: thumbnail_key is set; failed: the media could not be rendered;
 * none: not an image, video or PDF; deferred: the file was in the trash when its job ran (made if it is restored);
 * skipped: the tool it needs (ffmpeg, pdftoppm) is not installed, as `thumbnail_error` says.
 */
export type ThumbnailStatus = 'pending' | 'ready' | 'failed' | 'none' | 'deferred' | 'skipped';

/**
 * The background media work for one file's current version (`blobKey`). When new bytes are stored
 * the row starts over; job results for another version are discarded.
 */
@Entity('file_media')
export class FileMediaEntity {
  @PrimaryColumn({ type: 'varchar', length: 40, name: 'file_id' }) fileId: string;
  @Column({ type: 'varchar', length: 200, name: 'blob_key' }) blobKey: string;
  @Column({ type: 'varchar', length: 20, name: 'thumbnail_status' }) thumbnailStatus: ThumbnailStatus;
  @Column({ type: 'varchar', length: 500, name: 'thumbnail_error', nullable: true }) thumbnailError: string | null;
  /** The signature name clamd reported for an infected file. */
  @Column({ type: 'varchar', length: 200, name: 'scan_threat', nullable: true }) scanThreat: string | null;
  /** Why a scan was skipped (no scanner configured, file larger than clamd accepts). */
  @Column({ type: 'varchar', length: 500, name: 'scan_note', nullable: true }) scanNote: string | null;
  @Column({ ...TIMESTAMP_COLUMN, name: 'scanned_at', nullable: true }) scannedAt: Date | null;
  @Column({ ...TIMESTAMP_COLUMN, name: 'updated_at' }) updatedAt: Date;
}
