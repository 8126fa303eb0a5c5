import { ApiProperty } from '@nestjs/swagger';

/** One event of the feed: the webhook delivery envelope (without webhook_id and signature) plus its stable id. */
export class EventResponse {
  @ApiProperty({ example: 'evt_8f14e45fceea167a5a36dedd4bea2543', description: 'Stable event id; the same in webhook deliveries and replays.' })
  id: string;

  @ApiProperty({ example: 'file.uploaded' })
  event: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z', description: 'When the event occurred.' })
  timestamp: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The event\'s payload, as in webhook deliveries.' })
  data: Record<string, unknown>;

  static from(row: { id: string; event: string; payload: string; occurred_at: string }): EventResponse {
    return Object.assign(new EventResponse(), { id: row.id, event: row.event, timestamp: row.occurred_at, data: JSON.parse(row.payload) as Record<string, unknown> });
  }
}
