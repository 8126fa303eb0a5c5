import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { toQueryInteger } from '../../../common/http/pagination.request.js';

export const MAX_EVENTS_PER_PAGE = 1000;
export const MAX_WAIT_SECONDS = 30;

export class ListEventsRequest {
  @ApiPropertyOptional({ description: 'The `next_cursor` of an earlier answer. Without it the feed starts at the oldest retained event.', maxLength: 100 })
  @IsOptional() @IsString() @MaxLength(100)
  after?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_EVENTS_PER_PAGE, default: 100, description: 'Events per answer, 1 to 1000.' })
  @IsOptional() @Transform(toQueryInteger) @IsInt() @Min(1) @Max(MAX_EVENTS_PER_PAGE)
  limit: number = 100;

  // No `example`: Swagger UI's "Try it out" would fill it in and filter the feed unasked.
  @ApiPropertyOptional({ description: 'Comma-separated event names, e.g. `file.uploaded,file.deleted`; only these events are returned (the cursor still moves past the others).', maxLength: 500 })
  @IsOptional() @IsString() @MaxLength(500)
  types?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_WAIT_SECONDS,
    default: 0,
    description: 'Long poll: when no event is there yet, wait up to this many seconds for one; the answer comes as soon as one arrives, or empty at the deadline.',
  })
  @IsOptional() @Transform(toQueryInteger) @IsInt() @Min(0) @Max(MAX_WAIT_SECONDS)
  wait: number = 0;
}
