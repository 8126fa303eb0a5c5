import { Column, Entity, PrimaryColumn } from 'typeorm';
import { BIGINT_COLUMN } from '../../infra/database/columns.js';

/** One part of an S3 multipart upload a resumable upload has stored (see S3UploadBytes). */
@Entity('resumable_upload_parts')
export class ResumableUploadPartEntity {
  @PrimaryColumn({ type: 'varchar', length: 40, name: 'upload_id' }) uploadId: string;
  @PrimaryColumn({ type: 'integer', name: 'part_number' }) partNumber: number;
  @Column({ type: 'text' }) etag: string;
  @Column({ ...BIGINT_COLUMN }) size: number;
}
