import { ApiProperty } from '@nestjs/swagger';
import type { FileEntity } from '../file.entity.js';

/** Deleted-file info. */
export class DeletedFileResponse {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) deleted_at: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'End of the recovery window; null for a permanent deletion' }) recoverable_until: string | null;

  static from(file: FileEntity, deletedAt: Date, recoverableUntil: Date | null): DeletedFileResponse {
    return Object.assign(new DeletedFileResponse(), {
      id: file.id,
      name: file.name,
      deleted_at: deletedAt.toISOString(),
      recoverable_until: recoverableUntil?.toISOString() ?? null,
    });
  }
}

/** Restored-file info. */
export class RestoredFileResponse {
  @ApiProperty() id: string;
  @ApiProperty({ description: 'May carry a numbered suffix when the name was taken meanwhile' }) name: string;
  @ApiProperty({ format: 'date-time' }) restored_at: string;
  @ApiProperty({ type: String, nullable: true, description: 'null when the file is back in the root' }) folder_id: string | null;

  static from(file: FileEntity, restoredAt: Date): RestoredFileResponse {
    return Object.assign(new RestoredFileResponse(), { id: file.id, name: file.name, restored_at: restoredAt.toISOString(), folder_id: file.folderId });
  }
}

export class BulkDeleteErrorDoc {
  @ApiProperty({ example: 'not_found' }) code: string;
  @ApiProperty() message: string;
}

export class BulkDeleteFailureDoc {
  @ApiProperty() id: string;
  @ApiProperty({ type: BulkDeleteErrorDoc }) error: BulkDeleteErrorDoc;
}

/** Bulk delete result. */
export class BulkDeleteResponse {
  @ApiProperty({ type: [String] }) deleted: string[];
  @ApiProperty({ type: [BulkDeleteFailureDoc] }) failed: Array<{ id: string; error: { code: string; message: string } }>;
  @ApiProperty({ type: 'integer' }) total: number;
  @ApiProperty({ type: 'integer' }) deleted_count: number;
  @ApiProperty({ type: 'integer' }) failed_count: number;
}
