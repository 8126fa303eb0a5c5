import { Logger } from '@nestjs/common';
import { CommandBus, EventsHandler, IEventHandler } from '@nestjs/cqrs';
import { FileStoredEvent } from '../../files/events/file-stored.event.js';
import { ScheduleMediaWorkCommand } from '../commands/schedule-media-work.command.js';

/** After an upload or overwrite commits, queue the file's thumbnail and virus scan. */
@EventsHandler(FileStoredEvent)
export class ScheduleMediaWorkOnFileStored implements IEventHandler<FileStoredEvent> {
  private readonly logger = new Logger('Media');

  constructor(private readonly commands: CommandBus) {}

  async handle({ fileId, accountId, blobKey }: FileStoredEvent): Promise<void> {
    try {
      await this.commands.execute(new ScheduleMediaWorkCommand(fileId, accountId, blobKey));
    } catch (error) {
      // The upload already succeeded; the file stays scan_status pending, and publishing the event again heals it.
      this.logger.error({ fileId, err: error }, 'Could not schedule media work for a stored file');
    }
  }
}
