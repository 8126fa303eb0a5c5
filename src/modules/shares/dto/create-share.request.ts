import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString, Length, Matches, Max, Min } from 'class-validator';
import { ID_SHAPE } from '../share-token.js';
import { MAX_SHARE_PASSWORD_LENGTH, SHARE_PASSWORD_SHAPE } from '../share-password.js';

export const MIN_EXPIRES_IN = 60;
export const MAX_EXPIRES_IN = 31_536_000;

export class CreateShareRequest {
  @ApiProperty({ example: 'file_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b', minLength: 1, maxLength: 40, description: 'An active file of the account.' })
  @IsString() @Length(1, 40) @Matches(ID_SHAPE, { message: 'must be a file id' })
  file_id: string;

  @ApiPropertyOptional({ example: 'correct horse battery staple', minLength: 1, maxLength: MAX_SHARE_PASSWORD_LENGTH, pattern: SHARE_PASSWORD_SHAPE.source, description: 'Visitors must send it in X-Share-Password, so it cannot begin or end with a space or contain control characters (an HTTP header cannot carry them). Stored only as a slow salted hash.' })
  @IsOptional() @IsString() @Length(1, MAX_SHARE_PASSWORD_LENGTH)
  @Matches(SHARE_PASSWORD_SHAPE, { message: 'must not begin or end with a space or contain control characters: X-Share-Password, an HTTP header, cannot carry them' })
  password?: string;

  @ApiPropertyOptional({ type: 'integer', example: 604800, minimum: MIN_EXPIRES_IN, maximum: MAX_EXPIRES_IN, description: 'Seconds until the link expires (60 s to 365 days). Without it the link does not expire.' })
  @IsOptional() @IsInt() @Min(MIN_EXPIRES_IN) @Max(MAX_EXPIRES_IN)
  expires_in?: number;
}
