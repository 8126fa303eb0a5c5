import { Module } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { RecordDeliveryAttemptsHandler } from './record-delivery-attempts.command.js';
import { AttemptRecorder } from './attempt-recorder.js';
import { DeliverWebhookProcessor } from './deliver-webhook.processor.js';
import { DeliveryAttempts } from './delivery-attempts.js';
import { DeliveryDispatcher } from './delivery-dispatcher.js';
import { DeliveryQueuer } from './delivery-queuer.js';
import { DeliveryReader } from './delivery-reader.js';
import { DeliveryTargets } from './delivery-targets.js';
import { FirstAttempts } from './first-attempts.js';
import { OutboxRelay } from './outbox-relay.js';
import { ReplayEventsProcessor } from './replay-events.processor.js';
import { ReplayEventsHandler } from '../commands/replay-events.command.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';
import { WebhookSender } from './webhook-sender.js';
import { WebhookSlots } from './webhook-slots.js';
import { WebhooksModule } from '../webhooks.module.js';

/**
 * The moving parts of delivery: the outbox relay, first attempts and the BullMQ worker. Server only (AppModule.forServer),
 * so a CLI command never starts consuming the queue.
 */
@Module({
  imports: [WebhooksModule],
  providers: [
    WebhookDeliveryRepository,
    DeliveryTargets,
    OutboxRelay,
    DeliveryQueuer,
    DeliveryDispatcher,
    DeliveryReader,
    WebhookSender,
    { provide: WebhookSlots, useFactory: (config: AppConfig) => WebhookSlots.forConcurrency(config.webhookDeliveryConcurrency), inject: [AppConfig] },
    AttemptRecorder,
    DeliveryAttempts,
    FirstAttempts,
    RecordDeliveryAttemptsHandler,
    DeliverWebhookProcessor,
    // Replay needs the queue, which only the server has; its route is in WebhooksController.
    ReplayEventsHandler,
    ReplayEventsProcessor,
  ],
})
export class WebhookDeliveryModule {}
