import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength, ValidateIf } from 'class-validator';
import { ID_SHAPE } from '../../files/dto/file.requests.js';
import { CursorPageRequest } from '../../../common/http/pagination.request.js';
import type { FolderEntity } from '../folder.entity.js';

/** The folder object. */
export class FolderResponse {
  @ApiProperty({ example: 'fld_0193a6c1d2e47a0b8c9d0e1f2a3b4c5d' }) id: string;
  @ApiProperty({ example: 'Photos' }) name: string;
  @ApiProperty({ type: String, nullable: true, description: 'null in the root' }) parent_id: string | null;
  @ApiProperty({ description: 'User id' }) created_by: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) modified_at: string;

  static from(folder: FolderEntity): FolderResponse {
    return Object.assign(new FolderResponse(), {
      id: folder.id,
      name: folder.name,
      parent_id: folder.parentId,
      created_by: folder.createdBy,
      created_at: folder.createdAt.toISOString(),
      modified_at: folder.modifiedAt.toISOString(),
    });
  }
}

// The examples make the request body Swagger UI's "Try it out" proposes one that works: without them it sends
// parent_id "string", a folder that does not exist.
export class CreateFolderRequest {
  @ApiProperty({ example: 'Photos', minLength: 1, maxLength: 255, description: 'Well-formed Unicode (no unpaired surrogate), stored in NFC; then 1 to 255 characters, no / \\ or NUL, not . or ..; a taken name gets a numbered suffix' })
  @IsString()
  name: string;

  @ApiPropertyOptional({ type: String, nullable: true, minLength: 1, maxLength: 40, example: null, description: 'Parent folder; omitted or null for the root' })
  @ValidateIf((_, value) => value !== null) @IsOptional() @IsString() @Matches(ID_SHAPE, { message: 'must be a folder id' })
  parent_id?: string | null;
}

export class UpdateFolderRequest {
  @ApiPropertyOptional({ minLength: 1, maxLength: 255, description: 'New name, with the rules of a new folder\'s name' }) @IsOptional() @IsString()
  name?: string;

  @ApiPropertyOptional({ type: String, nullable: true, minLength: 1, maxLength: 40, description: 'New parent; null moves it to the root; omitted leaves it' })
  @ValidateIf((_, value) => value !== null) @IsOptional() @IsString() @Matches(ID_SHAPE, { message: 'must be a folder id' })
  parent_id?: string | null;
}

export const FOLDER_SORTS = ['name_asc', 'name_desc', 'created_asc', 'created_desc', 'modified_asc', 'modified_desc'] as const;

export class ListFoldersRequest extends CursorPageRequest {
  @ApiPropertyOptional({ description: 'Parent folder; omitted means the root', maxLength: 40 })
  @IsOptional() @IsString() @Matches(ID_SHAPE, { message: 'must be a folder id' })
  parent_id?: string;

  @ApiPropertyOptional({ enum: FOLDER_SORTS, default: 'name_asc', description: 'Ties are broken by id' })
  @IsOptional() @IsIn(FOLDER_SORTS)
  sort: (typeof FOLDER_SORTS)[number] = 'name_asc';

  @ApiPropertyOptional({ description: 'Case-insensitive substring of the name', maxLength: 255 })
  @IsOptional() @IsString() @MaxLength(255)
  search?: string;
}

export class DeletedFolderResponse {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty({ format: 'date-time' }) deleted_at: string;
  @ApiProperty({ type: 'integer', description: 'Folders trashed: this one and every folder inside it' }) folders_deleted: number;
  @ApiProperty({ type: 'integer', description: 'Files moved to the trash' }) files_deleted: number;
}
