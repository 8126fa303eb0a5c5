import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsBoolean, IsIn, IsOptional } from 'class-validator';
import { EVENT_NAMES, type EventName } from '../../../infra/outbox/domain-event.js';

export class UpdateWebhookRequest {
  @ApiPropertyOptional({ enum: EVENT_NAMES, isArray: true, minItems: 1, maxItems: EVENT_NAMES.length, uniqueItems: true, description: 'Replaces the subscribed events.' })
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(EVENT_NAMES.length) @ArrayUnique() @IsIn(EVENT_NAMES, { each: true })
  events?: EventName[];

  @ApiPropertyOptional({ description: 'false pauses deliveries; true resumes them and clears an automatic deactivation.' })
  @IsOptional() @IsBoolean()
  active?: boolean;
}
