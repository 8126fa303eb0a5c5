import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsBoolean, IsIn, IsOptional, IsString, ValidateBy } from 'class-validator';
import { SCOPES, type Scope } from '../../../common/auth/scopes.js';
import { API_KEY_NAME_MAX_LENGTH, apiKeyNameProblem } from '../api-key-name.js';

const IsApiKeyName = () =>
  ValidateBy({
    name: 'isApiKeyName',
    validator: {
      validate: (value: unknown) => typeof value !== 'string' || apiKeyNameProblem(value) === null,
      defaultMessage: (args) => `name ${apiKeyNameProblem(String(args?.value))}`,
    },
  });

export class CreateApiKeyRequest {
  @ApiProperty({ example: 'CI uploads', minLength: 1, maxLength: API_KEY_NAME_MAX_LENGTH, pattern: '\\S', description: 'Well-formed Unicode (no unpaired surrogate), 1 to 200 characters (code points: an emoji is one), not only spaces; kept exactly as sent.' })
  @IsString() @IsApiKeyName()
  name: string;

  @ApiProperty({ enum: SCOPES, isArray: true, minItems: 1, maxItems: SCOPES.length, uniqueItems: true, example: ['read', 'write'], description: 'One or more of read, write, delete, share.' })
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(SCOPES.length) @ArrayUnique() @IsIn(SCOPES, { each: true })
  scopes: Scope[];

  @ApiPropertyOptional({ default: false, description: 'Elevated keys may delete permanently, empty the trash and manage webhooks and keys.' })
  @IsOptional() @IsBoolean()
  elevated?: boolean;
}
