import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsOptional, IsString, Matches, MaxLength, ValidateIf } from 'class-validator';
import { InvalidRequest } from '../../../common/errors/api-error.js';
import { CursorPageRequest } from '../../../common/http/pagination.request.js';

/** The one wording for a bad `overwrite`, from validation (the form) and from parseOverwrite (tus metadata). */
const OVERWRITE_VALUES_MESSAGE = 'must be true or false';

export const FILE_SORTS = ['created_asc', 'created_desc', 'modified_asc', 'modified_desc', 'name_asc', 'name_desc', 'size_asc', 'size_desc'] as const;
export type FileSort = (typeof FILE_SORTS)[number];
export const FILE_CATEGORIES = ['image', 'video', 'audio', 'document', 'archive', 'other'] as const;

/** Ids are short opaque strings; anything else cannot name a file or folder. */
export const ID_SHAPE = /^[A-Za-z0-9_-]{1,40}$/;

export class ListFilesRequest extends CursorPageRequest {
  @ApiPropertyOptional({ description: 'Folder to list; omitted means the root', maxLength: 40 })
  @IsOptional() @IsString() @Matches(ID_SHAPE, { message: 'must be a folder id' })
  folder_id?: string;

  @ApiPropertyOptional({ enum: FILE_SORTS, default: 'created_desc', description: 'Ties are broken by id' })
  @IsOptional() @IsIn(FILE_SORTS)
  sort: FileSort = 'created_desc';

  @ApiPropertyOptional({ enum: FILE_CATEGORIES, description: 'Only files of this category' })
  @IsOptional() @IsIn(FILE_CATEGORIES)
  type?: (typeof FILE_CATEGORIES)[number];

  @ApiPropertyOptional({ description: 'Case-insensitive substring of the name', maxLength: 255 })
  @IsOptional() @IsString() @MaxLength(255)
  search?: string;
}

/**
 * A folder_id or overwrite sent empty is one not given: HTML forms and Swagger UI send every field of the form,
 * empty or not. (An empty `name` stays refused: names are 1 to 255 characters.)
 */
const EmptyFieldAsAbsent = () => Transform(({ value }: { value: unknown }) => (value === '' ? undefined : value));

export class UploadFileRequest {
  @ApiPropertyOptional({ minLength: 1, maxLength: 255, description: 'Name to store the file under; default the original file name. Well-formed Unicode (no unpaired surrogate), stored in NFC; 1 to 255 characters after that' })
  @IsOptional() @IsString()
  name?: string;

  // The empty example leaves Swagger UI's field blank; without it the form sends folder_id "string", a folder that does not exist.
  @ApiPropertyOptional({ example: '', maxLength: 40, description: 'Target folder; default (or empty) the root' })
  @EmptyFieldAsAbsent() @IsOptional() @IsString() @Matches(ID_SHAPE, { message: 'must be a folder id' })
  folder_id?: string;

  @ApiPropertyOptional({ enum: ['true', 'false'], default: 'false', description: 'Replace a same-named file in the folder instead of taking a numbered name; default (or empty) false' })
  @EmptyFieldAsAbsent() @IsOptional() @IsIn(['true', 'false'], { message: OVERWRITE_VALUES_MESSAGE })
  overwrite?: string;
}

/** The multipart form as documented: the fields plus the file part (which multer takes, not validation). */
export class UploadFileForm extends UploadFileRequest {
  @ApiProperty({ type: 'string', format: 'binary', description: 'The content (one file part named "file")' })
  file?: unknown;
}

export class UpdateFileRequest {
  @ApiPropertyOptional({ minLength: 1, maxLength: 255, description: 'New name (well-formed Unicode, no unpaired surrogate; stored in NFC; then 1 to 255 characters, no / \\ or NUL, not . or ..)' })
  @IsOptional() @IsString()
  name?: string;

  @ApiPropertyOptional({ type: String, nullable: true, minLength: 1, maxLength: 40, description: 'Folder to move to; null moves to the root; omitted leaves it' })
  @ValidateIf((_, value) => value !== null) @IsOptional() @IsString() @Matches(ID_SHAPE, { message: 'must be a folder id' })
  folder_id?: string | null;
}

export class DeleteFileRequest {
  @ApiPropertyOptional({ enum: ['true', 'false'], default: 'false', description: 'true deletes for good (elevated key); otherwise to the trash' })
  @IsOptional() @IsIn(['true', 'false'])
  permanent?: 'true' | 'false';
}

export class BulkDeleteRequest {
  @ApiProperty({ type: [String], minItems: 1, maxItems: 1000, description: 'Processed in order' })
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(1000) @IsString({ each: true }) @Matches(/^.{1,100}$/s, { each: true, message: 'each id must be 1 to 100 characters' })
  file_ids: string[];
}

export class SignedUrlRequest {
  @ApiProperty({ description: 'Unix time the link expires' }) @IsOptional() @IsString() expires?: string;
  @ApiProperty({ description: 'HMAC-SHA256 of the path and expiry' }) @IsOptional() @IsString() signature?: string;
}


/** The `overwrite` of a multipart form or of tus metadata: `true` or `false`, absent or empty meaning false. */
export function parseOverwrite(value: unknown): boolean {
  if (value === undefined || value === '') return false;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw InvalidRequest.fields([{ field: 'overwrite', message: OVERWRITE_VALUES_MESSAGE }]);
}
