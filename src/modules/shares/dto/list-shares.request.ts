import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length, Matches } from 'class-validator';
import { ID_SHAPE } from '../share-token.js';
import { CursorPageRequest } from '../../../common/http/pagination.request.js';

export class ListSharesRequest extends CursorPageRequest {
  @ApiPropertyOptional({ example: 'file_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b', description: 'Only the links of this file (including links of trashed or deleted files).', maxLength: 40 })
  @IsOptional() @IsString() @Length(1, 40) @Matches(ID_SHAPE, { message: 'must be a file id' })
  file_id?: string;
}
