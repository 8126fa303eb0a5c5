import { Logger } from '@nestjs/common';
import { CommandBus, EventsHandler, IEventHandler } from '@nestjs/cqrs';
import { OutboxRelayedEvent } from '../../../infra/outbox/outbox-relayed.event.js';
import { ScheduleUploadedMediaCommand } from '../commands/schedule-uploaded-media.command.js';

/** Queues the scans and thumbnails of the uploads in one outbox relay batch, in bulk. */
@EventsHandler(OutboxRelayedEvent)
export class ScheduleMediaWorkOnUploadsRelayed implements IEventHandler<OutboxRelayedEvent> {
  private readonly logger = new Logger('Media');

  constructor(private readonly commands: CommandBus) {}

  async handle({ events }: OutboxRelayedEvent): Promise<void> {
    const files = events
      .filter((event) => event.name === 'file.uploaded')
      .map((event) => ({ fileId: (event.data.file as { id: string }).id, accountId: event.accountId }));
    if (files.length === 0) return;
    try {
      await this.commands.execute(new ScheduleUploadedMediaCommand(files));
    } catch (error) {
      // The uploads succeeded; their scans or thumbnails stay pending, and the stalled-media sweep schedules them again.
      this.logger.error({ files: files.length, err: error }, 'Could not schedule media work for uploaded files');
    }
  }
}
