import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { UrlSigner } from '../../../infra/storage/url-signer.js';
import type { FileEntity } from '../file.entity.js';

export const downloadPath = (fileId: string) => `/v1/files/${fileId}/download`;
export const thumbnailPath = (fileId: string) => `/v1/files/${fileId}/thumbnail`;

/** The File object of the specification. */
export class FileResponse {
  @ApiProperty({ example: 'file_0193a6c1d2e47a0b8c9d0e1f2a3b4c5d' }) id: string;
  @ApiProperty({ example: 'report.pdf' }) name: string;
  @ApiProperty({ example: 48213, description: 'Bytes' }) size: number;
  @ApiProperty({ example: 'application/pdf', description: 'Detected from the content, then the extension' }) type: string;
  @ApiProperty({ enum: ['image', 'video', 'audio', 'document', 'archive', 'other'] }) category: string;
  @ApiProperty({ type: String, nullable: true, description: 'null in the root' }) folder_id: string | null;
  @ApiProperty({ example: '2026-11-21T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ example: '2026-11-21T10:00:00.000Z' }) modified_at: string;
  @ApiPropertyOptional({ description: 'Signed, valid one hour; present only once a thumbnail exists' }) thumbnail_url?: string;
  @ApiProperty({ description: 'Signed, valid one hour, no API key needed; supports Range and If-None-Match' }) download_url: string;
  @ApiPropertyOptional({ description: 'True when the file has a live share link (not on upload answers)' }) is_shared?: boolean;
  @ApiProperty({ example: '9e107d9d372bb6826bd81d3542a419d6' }) md5_hash: string;
  @ApiProperty({ enum: ['pending', 'clean', 'infected', 'skipped'], description: 'Virus scan state' }) scan_status: string;

  static from(file: FileEntity, signer: UrlSigner, now: Date, options: { isShared?: boolean } = {}): FileResponse {
    const response = Object.assign(new FileResponse(), {
      id: file.id,
      name: file.name,
      size: file.size,
      type: file.mimeType,
      category: file.category,
      folder_id: file.folderId,
      created_at: file.createdAt.toISOString(),
      modified_at: file.modifiedAt.toISOString(),
      ...(file.thumbnailKey ? { thumbnail_url: signer.sign(thumbnailPath(file.id), now) } : {}),
      download_url: signer.sign(downloadPath(file.id), now),
      ...(options.isShared === undefined ? {} : { is_shared: options.isShared }),
      md5_hash: file.md5,
      scan_status: file.scanStatus,
    });
    return response;
  }
}
