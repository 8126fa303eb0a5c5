import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsBoolean, IsIn, IsOptional, IsString, Length } from 'class-validator';
import { SCOPES, type Scope } from '../../../common/auth/scopes.js';

export class CreateApiKeyRequest {
  @ApiProperty({ example: 'CI uploads', minLength: 1, maxLength: 200 })
  @IsString() @Length(1, 200)
  name: string;

  @ApiProperty({ enum: SCOPES, isArray: true, example: ['read', 'write'], description: 'One or more of read, write, delete, share.' })
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(SCOPES.length) @ArrayUnique() @IsIn(SCOPES, { each: true })
  scopes: Scope[];

  @ApiPropertyOptional({ default: false, description: 'Elevated keys may delete permanently, empty the trash and manage webhooks and keys.' })
  @IsOptional() @IsBoolean()
  elevated?: boolean;
}
