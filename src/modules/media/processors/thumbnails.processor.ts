import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger, OnApplicationBootstrap } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Job, UnrecoverableError } from 'bullmq';
import { AppConfig } from '../../../config/app-config.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { GenerateThumbnailCommand, type ThumbnailOutcome } from '../commands/generate-thumbnail.command.js';
import { RecordMediaFailureCommand } from '../commands/record-media-failure.command.js';
import type { MediaJobData } from '../media-jobs.js';
import { UnusableMediaError } from '../thumbnails/thumbnail-renderer.js';

@Processor(QUEUES.thumbnails)
export class ThumbnailsProcessor extends WorkerHost implements OnApplicationBootstrap {
  private readonly logger = new Logger('Media');

  constructor(
    private readonly commands: CommandBus,
    private readonly config: AppConfig,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.config.media.thumbnailConcurrency;
  }

  async process(job: Job<MediaJobData>): Promise<ThumbnailOutcome> {
    try {
      return await this.commands.execute(new GenerateThumbnailCommand(job.data));
    } catch (error) {
      // Corrupt or hostile media will not render on a second try: fail now, keep the file as it is.
      if (error instanceof UnusableMediaError) throw new UnrecoverableError(error.message);
      throw error;
    }
  }

  @OnWorkerEvent('failed')
  async onFailed(job: Job<MediaJobData> | undefined, error: Error): Promise<void> {
    if (!job) return;
    const final = error instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1);
    this.logger.warn({ jobId: job.id, fileId: job.data.fileId, attempt: job.attemptsMade, final, err: error.message }, 'Thumbnail job failed');
    // Unusable media was recorded by the command; a transient failure that ran out of retries is recorded here.
    if (final && !(error instanceof UnrecoverableError)) {
      await this.commands.execute(new RecordMediaFailureCommand('thumbnail', job.data, error.message)).catch(() => undefined);
    }
  }
}
