import { Module } from '@nestjs/common';
import { RecordDeliveryAttemptsHandler } from './commands/record-delivery-attempts.command.js';
import { AttemptRecorder } from './delivery/attempt-recorder.js';
import { DeliverWebhookProcessor } from './delivery/deliver-webhook.processor.js';
import { DeliveryDispatcher } from './delivery/delivery-dispatcher.js';
import { DeliveryReader } from './delivery/delivery-reader.js';
import { OutboxCommitSubscriber } from './delivery/outbox-commit.subscriber.js';
import { WebhookSender } from './delivery/webhook-sender.js';
import { WebhooksModule } from './webhooks.module.js';

/**
 * The moving parts of delivery: the outbox relay and the BullMQ worker. Server only (AppModule.forServer),
 * so a CLI command never starts consuming the queue.
 */
@Module({
  imports: [WebhooksModule],
  providers: [WebhookSender, DeliveryDispatcher, DeliverWebhookProcessor, OutboxCommitSubscriber, RecordDeliveryAttemptsHandler, AttemptRecorder, DeliveryReader],
})
export class WebhookDeliveryModule {}
