import { Module } from '@nestjs/common';
import { RecordDeliveryAttemptHandler } from './commands/record-delivery-attempt.command.js';
import { DeliverWebhookProcessor } from './delivery/deliver-webhook.processor.js';
import { DeliveryDispatcher } from './delivery/delivery-dispatcher.js';
import { OutboxCommitSubscriber } from './delivery/outbox-commit.subscriber.js';
import { WebhookSender } from './delivery/webhook-sender.js';
import { WebhooksModule } from './webhooks.module.js';

/**
 * The moving parts of delivery: the outbox relay and the BullMQ worker. Server only (AppModule.forServer),
 * so a CLI command never starts consuming the queue.
 */
@Module({
  imports: [WebhooksModule],
  providers: [WebhookSender, DeliveryDispatcher, DeliverWebhookProcessor, OutboxCommitSubscriber, RecordDeliveryAttemptHandler],
})
export class WebhookDeliveryModule {}
