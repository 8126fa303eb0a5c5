import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsBoolean, IsIn, IsOptional, IsString, Length, Matches, ValidateBy } from 'class-validator';
import { SCOPES, type Scope } from '../../../common/auth/scopes.js';

/** An unpaired surrogate cannot be stored as UTF-8: the database would keep a replacement character, not the name answered. */
const IsWellFormedUnicode = () =>
  ValidateBy({
    name: 'isWellFormedUnicode',
    validator: { validate: (value: unknown) => typeof value !== 'string' || value.isWellFormed(), defaultMessage: () => 'must be well-formed Unicode (no unpaired surrogate, U+D800 to U+DFFF)' },
  });

export class CreateApiKeyRequest {
  @ApiProperty({ example: 'CI uploads', minLength: 1, maxLength: 200, pattern: '\\S', description: 'Well-formed Unicode (no unpaired surrogate), 1 to 200 characters, not only spaces; kept exactly as sent.' })
  // A name of only spaces lists as a blank in every key list; the CLI refuses it too.
  @IsString() @Length(1, 200) @Matches(/\S/, { message: 'name must contain a character other than spaces' }) @IsWellFormedUnicode()
  name: string;

  @ApiProperty({ enum: SCOPES, isArray: true, example: ['read', 'write'], description: 'One or more of read, write, delete, share.' })
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(SCOPES.length) @ArrayUnique() @IsIn(SCOPES, { each: true })
  scopes: Scope[];

  @ApiPropertyOptional({ default: false, description: 'Elevated keys may delete permanently, empty the trash and manage webhooks and keys.' })
  @IsOptional() @IsBoolean()
  elevated?: boolean;
}
