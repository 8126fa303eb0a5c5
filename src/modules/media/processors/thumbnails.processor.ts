import { Processor } from '@nestjs/bullmq';
import { CommandBus } from '@nestjs/cqrs';
import { Job, UnrecoverableError } from 'bullmq';
import { AppConfig } from '../../../config/app-config.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { GenerateThumbnailCommand, type ThumbnailOutcome } from '../commands/generate-thumbnail.command.js';
import type { MediaJobData } from '../media-jobs.js';
import { UnusableMediaError } from '../thumbnails/thumbnail-renderer.js';
import { MediaJobProcessor } from './media-job.processor.js';

@Processor(QUEUES.thumbnails)
export class ThumbnailsProcessor extends MediaJobProcessor {
  constructor(commands: CommandBus, config: AppConfig) {
    super(commands, 'thumbnail', () => config.media.thumbnailConcurrency);
  }

  async process(job: Job<MediaJobData>): Promise<ThumbnailOutcome> {
    try {
      return await this.commands.execute(new GenerateThumbnailCommand(job.data));
    } catch (error) {
      // Corrupt or hostile media will not render on a second try: fail now (the command recorded it), keep the file as it is.
      if (error instanceof UnusableMediaError) throw new UnrecoverableError(error.message);
      throw error;
    }
  }
}
