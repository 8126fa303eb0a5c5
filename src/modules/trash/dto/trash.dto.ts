import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { CursorPageRequest } from '../../../common/http/pagination.request.js';
import type { FileEntity } from '../../files/file.entity.js';

export const TRASH_SORTS = ['deleted_desc', 'deleted_asc'] as const;

export class ListTrashRequest extends CursorPageRequest {
  @ApiPropertyOptional({ enum: TRASH_SORTS, default: 'deleted_desc', description: 'Ties are broken by id' })
  @IsOptional() @IsIn(TRASH_SORTS)
  sort: (typeof TRASH_SORTS)[number] = 'deleted_desc';

  @ApiPropertyOptional({ description: 'Case-insensitive substring of the name', maxLength: 255 })
  @IsOptional() @IsString() @MaxLength(255)
  search?: string;
}

/** An item of the trash listing. */
export class TrashedFileResponse {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: 'integer' }) size: number;
  @ApiProperty() type: string;
  @ApiProperty({ enum: ['image', 'video', 'audio', 'document', 'archive', 'other'] }) category: string;
  @ApiProperty({ type: String, nullable: true, description: 'The folder it was deleted from' }) folder_id: string | null;
  @ApiProperty({ format: 'date-time' }) deleted_at: string;
  @ApiProperty({ format: 'date-time' }) recoverable_until: string;

  static from(file: FileEntity): TrashedFileResponse {
    return Object.assign(new TrashedFileResponse(), {
      id: file.id,
      name: file.name,
      size: file.size,
      type: file.mimeType,
      category: file.category,
      folder_id: file.folderId,
      deleted_at: file.deletedAt?.toISOString(),
      recoverable_until: file.recoverableUntil?.toISOString(),
    });
  }
}

export class EmptiedTrashResponse {
  @ApiProperty({ type: 'integer' }) deleted_count: number;
  @ApiProperty({ type: 'integer', description: 'Storage freed, in bytes' }) freed_bytes: number;
}
