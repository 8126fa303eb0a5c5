import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { IsTimestamp, TIMESTAMP_FORMAT } from '../../../common/http/timestamp.js';

export class ReplayWebhookRequest {
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z', description: `Start of the window (inclusive): events that occurred at or after it. Format: ${TIMESTAMP_FORMAT}.` })
  @IsTimestamp()
  since: string;

  @ApiPropertyOptional({ format: 'date-time', example: '2026-11-21T11:00:00.000Z', description: `End of the window (exclusive); now when omitted or later than now (a replay sends what has happened). Format: ${TIMESTAMP_FORMAT}.` })
  @IsOptional() @IsTimestamp()
  until?: string;
}

export class ReplayQueuedResponse {
  @ApiProperty({ type: 'integer', example: 42, description: 'How many event deliveries this replay queues (events already waiting in an earlier replay are not counted again).' })
  queued: number;
}
