import { ApiProperty } from '@nestjs/swagger';
import { EVENT_NAMES, type EventName } from '../../../infra/outbox/domain-event.js';
import type { DisabledReason, WebhookEntity } from '../webhook.entity.js';

export class WebhookResponse {
  @ApiProperty({ example: 'wh_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b' }) id: string;
  @ApiProperty({ example: 'https://example.com/hooks/storage' }) url: string;
  @ApiProperty({ enum: EVENT_NAMES, isArray: true }) events: EventName[];
  @ApiProperty() active: boolean;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) updated_at: string;
  @ApiProperty({
    enum: ['deliveries_failing'],
    nullable: true,
    type: String,
    description: 'Why the service turned the webhook off: `deliveries_failing` when every delivery failed for 24 hours. Null otherwise.',
  })
  disabled_reason: DisabledReason | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, example: null }) disabled_at: string | null;
  @ApiProperty({ format: 'date-time', nullable: true,
    type: String,
    example: null,
    description: 'While a rotated-out secret still signs beside the current one: when it stops. Null otherwise.',
  })
  previous_secret_expires_at: string | null;

  static from(webhook: WebhookEntity, now: Date): WebhookResponse {
    return Object.assign(new WebhookResponse(), {
      id: webhook.id,
      url: webhook.url,
      events: webhook.events,
      active: webhook.active,
      created_at: webhook.createdAt.toISOString(),
      updated_at: webhook.updatedAt.toISOString(),
      disabled_reason: webhook.disabledReason,
      disabled_at: webhook.disabledAt?.toISOString() ?? null,
      previous_secret_expires_at: webhook.previousSecretGraceEnd(now)?.toISOString() ?? null,
    });
  }
}

/** The answer of a secret rotation: the only one that carries the new secret. */
export class RotatedWebhookSecretResponse {
  @ApiProperty({ example: 'wh_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b' }) id: string;
  @ApiProperty({ example: 'whsec_…', description: 'The new signing secret. Shown only here; store it now.' }) secret: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) rotated_at: string;
  @ApiProperty({ format: 'date-time', nullable: true,
    type: String,
    example: '2026-11-22T10:00:00.000Z',
    description: 'Until when the previous secret keeps signing beside the new one; null when it stopped at once (`expires_in: 0`).',
  })
  previous_secret_expires_at: string | null;

  static of(webhook: WebhookEntity, secret: string, now: Date): RotatedWebhookSecretResponse {
    return Object.assign(new RotatedWebhookSecretResponse(), {
      id: webhook.id,
      secret,
      rotated_at: now.toISOString(),
      previous_secret_expires_at: webhook.previousSecretGraceEnd(now)?.toISOString() ?? null,
    });
  }
}

/** The creation answer: the only one that carries the secret. */
export class CreatedWebhookResponse {
  @ApiProperty({ example: 'wh_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b' }) id: string;
  @ApiProperty({ example: 'https://example.com/hooks/storage' }) url: string;
  @ApiProperty({ enum: EVENT_NAMES, isArray: true }) events: EventName[];
  @ApiProperty() active: boolean;
  @ApiProperty({ example: 'whsec_…', description: 'The signing secret. Shown only here; store it now.' }) secret: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) created_at: string;

  static withSecret(webhook: WebhookEntity, secret: string): CreatedWebhookResponse {
    return Object.assign(new CreatedWebhookResponse(), {
      id: webhook.id,
      url: webhook.url,
      events: webhook.events,
      active: webhook.active,
      secret,
      created_at: webhook.createdAt.toISOString(),
    });
  }
}

export class DeletedWebhookResponse {
  @ApiProperty() id: string;
  @ApiProperty({ example: true }) deleted: true;
}
