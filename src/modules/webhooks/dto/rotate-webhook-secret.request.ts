import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

export const DEFAULT_SECRET_GRACE_SECONDS = 86_400;
export const MAX_SECRET_GRACE_SECONDS = 604_800;

export class RotateWebhookSecretRequest {
  // No `default` in the schema: generated clients would then make the field required.
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_SECRET_GRACE_SECONDS,
    example: DEFAULT_SECRET_GRACE_SECONDS,
    description: 'Seconds during which the previous secret keeps signing beside the new one; default 86400 (24 hours), 0 stops it at once, at most 604800 (7 days).',
  })
  @IsOptional() @IsInt() @Min(0) @Max(MAX_SECRET_GRACE_SECONDS)
  expires_in?: number;
}
