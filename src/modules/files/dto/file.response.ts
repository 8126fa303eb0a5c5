import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { UrlSigner } from '../../../infra/storage/url-signer.js';
import type { FileEntity } from '../file.entity.js';

export const downloadPath = (fileId: string) => `/v1/files/${fileId}/download`;
export const thumbnailPath = (fileId: string) => `/v1/files/${fileId}/thumbnail`;

/** The File object of the specification. */
export class FileResponse {
  @ApiProperty({ example: 'file_0193a6c1d2e47a0b8c9d0e1f2a3b4c5d' }) id: string;
  @ApiProperty({ example: 'report.pdf' }) name: string;
  @ApiProperty({ type: 'integer', example: 48213, description: 'Bytes' }) size: number;
  @ApiProperty({ example: 'application/pdf', description: 'Detected from the content, then the extension' }) type: string;
  @ApiProperty({ enum: ['image', 'video', 'audio', 'document', 'archive', 'other'] }) category: string;
  @ApiProperty({ type: String, nullable: true, description: 'null in the root' }) folder_id: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) modified_at: string;
  @ApiPropertyOptional({ description: 'Signed, valid one hour; present only once a thumbnail exists' }) thumbnail_url?: string;
  @ApiProperty({ description: 'Signed, valid one hour, no API key needed; supports Range and If-None-Match' }) download_url: string;
  @ApiPropertyOptional({ description: 'True when the file has a live share link (not on upload answers)' }) is_shared?: boolean;
  @ApiProperty({ example: '9e107d9d372bb6826bd81d3542a419d6' }) md5_hash: string;
  @ApiProperty({ enum: ['pending', 'clean', 'infected', 'skipped'], description: 'Virus scan state' }) scan_status: string;

  static from(file: FileEntity, signer: UrlSigner, now: Date, options: { isShared?: boolean } = {}): FileResponse {
    return FileResponse.of(
      {
        id: file.id,
        name: file.name,
        size: file.size,
        mime_type: file.mimeType,
        category: file.category,
        folder_id: file.folderId,
        created_at: file.createdAt.toISOString(),
        modified_at: file.modifiedAt.toISOString(),
        thumbnail_key: file.thumbnailKey,
        md5: file.md5,
        scan_status: file.scanStatus,
      },
      signer,
      now,
      options,
    );
  }

  /** From a `files` row as selected by column name (timestamps are stored in the API's ISO format). */
  static fromRow(row: FileRow, signer: UrlSigner, now: Date, options: { isShared?: boolean } = {}): FileResponse {
    return FileResponse.of(row, signer, now, options);
  }

  private static of(row: FileRow, signer: UrlSigner, now: Date, options: { isShared?: boolean }): FileResponse {
    const response = new FileResponse();
    response.id = row.id;
    response.name = row.name;
    // PostgreSQL hands BIGINT back as a string.
    response.size = Number(row.size);
    response.type = row.mime_type;
    response.category = row.category;
    response.folder_id = row.folder_id;
    response.created_at = row.created_at;
    response.modified_at = row.modified_at;
    if (row.thumbnail_key) response.thumbnail_url = signer.sign(thumbnailPath(row.id), now);
    response.download_url = signer.sign(downloadPath(row.id), now);
    if (options.isShared !== undefined) response.is_shared = options.isShared;
    response.md5_hash = row.md5;
    response.scan_status = row.scan_status;
    return response;
  }
}

/** The columns of `files` a File object is made of, as the database returns them. */
export interface FileRow {
  id: string;
  name: string;
  size: number | string;
  mime_type: string;
  category: string;
  folder_id: string | null;
  created_at: string;
  modified_at: string;
  thumbnail_key: string | null;
  md5: string;
  scan_status: string;
}
