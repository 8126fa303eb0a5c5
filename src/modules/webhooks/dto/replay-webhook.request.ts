import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsISO8601, IsOptional } from 'class-validator';

export class ReplayWebhookRequest {
  @ApiProperty({ example: '2026-11-21T10:00:00.000Z', description: 'Start of the window (inclusive): events that occurred at or after it.' })
  @IsISO8601({ strict: true })
  since: string;

  @ApiPropertyOptional({ example: '2026-11-21T11:00:00.000Z', description: 'End of the window (exclusive); now when omitted.' })
  @IsOptional() @IsISO8601({ strict: true })
  until?: string;
}

export class ReplayQueuedResponse {
  @ApiProperty({ example: 42, description: 'How many event deliveries this replay queues (events already waiting in an earlier replay are not counted again).' })
  queued: number;
}
