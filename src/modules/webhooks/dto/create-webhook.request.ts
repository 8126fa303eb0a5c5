import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsBoolean, IsIn, IsOptional, IsString, Length, Matches, MaxLength } from 'class-validator';
import { EVENT_NAMES, type EventName } from '../../../infra/outbox/domain-event.js';

export class CreateWebhookRequest {
  @ApiProperty({ example: 'https://example.com/hooks/storage', maxLength: 2048, description: 'An https URL on a public address, exactly as written: `https://host/path` spelled out (no backslashes, no port 0), no spaces or control characters around or inside it (percent-encode them).' })
  @IsString() @MaxLength(2048)
  url: string;

  @ApiProperty({ enum: EVENT_NAMES, isArray: true, minItems: 1, maxItems: EVENT_NAMES.length, uniqueItems: true, example: ['file.uploaded', 'file.deleted'], description: 'One or more of the event names.' })
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(EVENT_NAMES.length) @ArrayUnique() @IsIn(EVENT_NAMES, { each: true })
  events: EventName[];

  @ApiPropertyOptional({
    minLength: 1,
    maxLength: 256,
    pattern: '\\S',
    description: 'Signing secret, taken exactly as written; not only whitespace. Generated when omitted. Returned only in the creation answer.',
  })
  // Blank signs like a known key: anyone could forge its deliveries.
  @IsOptional() @IsString() @Length(1, 256) @Matches(/\S/u, { message: 'secret must contain a character other than whitespace' })
  secret?: string;

  @ApiPropertyOptional({ default: true })
  @IsOptional() @IsBoolean()
  active?: boolean;
}
