import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { SCOPES, type Scope } from '../../../common/auth/scopes.js';
import type { ApiKeyEntity } from '../api-key.entity.js';

export class ApiKeyResponse {
  @ApiProperty({ example: 'key_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b' }) id: string;
  @ApiProperty({ example: 'CI uploads' }) name: string;
  @ApiProperty({ example: 'fss_Xy12ab34', description: 'The first characters of the key, to tell keys apart.' }) key_prefix: string;
  @ApiProperty({ enum: SCOPES, isArray: true, example: ['read', 'write'] }) scopes: Scope[];
  @ApiProperty({ example: false }) elevated: boolean;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:05:00.000Z', nullable: true, type: String }) last_used_at: string | null;

  static from(key: ApiKeyEntity): ApiKeyResponse {
    return Object.assign(new ApiKeyResponse(), {
      id: key.id,
      name: key.name,
      key_prefix: key.keyPrefix,
      scopes: key.scopes,
      elevated: key.elevated,
      created_at: key.createdAt.toISOString(),
      last_used_at: key.lastUsedAt?.toISOString() ?? null,
    });
  }
}

/** A just-created key: the only answer that ever contains the secret. */
export class CreatedApiKeyResponse extends ApiKeyResponse {
  @ApiProperty({ example: 'fss_Xy12ab34…', description: 'The secret key. Shown once; store it now.' }) api_key: string;

  static withSecret(key: ApiKeyEntity, secret: string): CreatedApiKeyResponse {
    return Object.assign(new CreatedApiKeyResponse(), ApiKeyResponse.from(key), { api_key: secret });
  }
}

export class RevokedApiKeyResponse {
  @ApiProperty() id: string;
  @ApiProperty({ example: true }) revoked: boolean;
  @ApiPropertyOptional({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) revoked_at: string;
}
