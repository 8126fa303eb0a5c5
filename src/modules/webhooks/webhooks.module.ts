import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CreateWebhookHandler } from './commands/create-webhook.command.js';
import { DeleteWebhookHandler } from './commands/delete-webhook.command.js';
import { RedeliverHandler } from './commands/redeliver.command.js';
import { RotateWebhookSecretHandler } from './commands/rotate-webhook-secret.command.js';
import { SendTestEventHandler } from './commands/send-test-event.command.js';
import { UpdateWebhookHandler } from './commands/update-webhook.command.js';
import { DeliverySignal } from './delivery/delivery-signal.js';
import { GetDeliveryHandler } from './queries/get-delivery.query.js';
import { GetWebhookHandler } from './queries/get-webhook.query.js';
import { ListDeliveriesHandler } from './queries/list-deliveries.query.js';
import { ListWebhooksHandler } from './queries/list-webhooks.query.js';
import { WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { WebhookSecretBox } from './webhook-secret-box.js';
import { WebhookEntity } from './webhook.entity.js';
import { WebhooksController } from './webhooks.controller.js';

/** Webhook configuration and delivery logs. Delivering (outbox relay and queue worker) is WebhookDeliveryModule, server only. */
@Module({
  imports: [TypeOrmModule.forFeature([WebhookEntity, WebhookDeliveryEntity])],
  controllers: [WebhooksController],
  providers: [
    WebhookSecretBox,
    DeliverySignal,
    CreateWebhookHandler,
    UpdateWebhookHandler,
    DeleteWebhookHandler,
    SendTestEventHandler,
    RedeliverHandler,
    RotateWebhookSecretHandler,
    ListWebhooksHandler,
    GetWebhookHandler,
    ListDeliveriesHandler,
    GetDeliveryHandler,
  ],
  exports: [TypeOrmModule, WebhookSecretBox, DeliverySignal],
})
export class WebhooksModule {}
