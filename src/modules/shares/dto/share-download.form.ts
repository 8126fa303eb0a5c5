import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { MAX_SHARE_PASSWORD_LENGTH } from '../share-password.js';

/** The share page's form: the password travels in the body, never in the URL. */
export class ShareDownloadForm {
  @ApiPropertyOptional({ maxLength: MAX_SHARE_PASSWORD_LENGTH, description: 'The link password (alternative to the X-Share-Password header).' })
  @IsOptional() @IsString() @MaxLength(MAX_SHARE_PASSWORD_LENGTH)
  password?: string;
}
