import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length, Matches } from 'class-validator';
import { ID_SHAPE } from '../share-token.js';
import { CursorPageRequest } from '../../../common/http/pagination.request.js';

export class ListSharesRequest extends CursorPageRequest {
  // No `example`: Swagger UI's "Try it out" fills it in, and would list the links of a file that does not exist.
  @ApiPropertyOptional({ description: 'Only the links of this file (including links of trashed or deleted files).', minLength: 1, maxLength: 40 })
  @IsOptional() @IsString() @Length(1, 40) @Matches(ID_SHAPE, { message: 'must be a file id' })
  file_id?: string;
}
