import { ApiProperty } from '@nestjs/swagger';
import type { DeliveryStatus, WebhookDeliveryEntity } from '../webhook-delivery.entity.js';

export class DeliveryAttemptResponse {
  @ApiProperty({ type: 'integer', example: 1 }) attempt: number;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) started_at: string;
  @ApiProperty({ type: 'integer', example: 84 }) duration_ms: number;
  @ApiProperty({ nullable: true, type: 'integer', example: 200, description: 'Null when no HTTP answer came (timeout, refused connection).' })
  response_status: number | null;
  @ApiProperty({ nullable: true, type: String, example: null }) error: string | null;
}

export class DeliveryResponse {
  @ApiProperty({ example: 'dlv_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b', description: 'Sent as X-Service-Delivery-ID; the same on every attempt.' }) id: string;
  @ApiProperty() webhook_id: string;
  @ApiProperty({ example: 'file.uploaded' }) event: string;
  @ApiProperty({ enum: ['pending', 'succeeded', 'failed'] }) status: DeliveryStatus;
  @ApiProperty({ type: 'integer', example: 1 }) attempts: number;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) last_attempt_at: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, description: 'When the next attempt is due; null once the delivery succeeded or failed.' })
  next_attempt_at: string | null;
  @ApiProperty({ nullable: true, type: 'integer' }) response_status: number | null;
  @ApiProperty({ nullable: true, type: String }) error: string | null;
  @ApiProperty({ type: DeliveryAttemptResponse, isArray: true }) attempt_log: DeliveryAttemptResponse[];

  static from(delivery: WebhookDeliveryEntity): DeliveryResponse {
    return Object.assign(new DeliveryResponse(), {
      id: delivery.id,
      webhook_id: delivery.webhookId,
      event: delivery.event,
      status: delivery.status,
      attempts: delivery.attempts,
      created_at: delivery.createdAt.toISOString(),
      last_attempt_at: delivery.lastAttemptAt?.toISOString() ?? null,
      next_attempt_at: delivery.nextAttemptAt?.toISOString() ?? null,
      response_status: delivery.responseStatus,
      error: delivery.error,
      attempt_log: delivery.attemptLog.map((a) => ({ ...a })),
    });
  }
}
