import { OnWorkerEvent, WorkerHost } from '@nestjs/bullmq';
import { Logger, OnApplicationBootstrap } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Job, UnrecoverableError } from 'bullmq';
import { RecordMediaFailureCommand } from '../commands/record-media-failure.command.js';
import type { MediaJobData } from '../media-jobs.js';

/**
 * The shape of both media workers (scans, thumbnails): concurrency from config, each job one command,
 * and a failure that is final gets recorded on the file. An UnrecoverableError is final at once, and
 * the command that threw it has already recorded it.
 */
export abstract class MediaJobProcessor extends WorkerHost implements OnApplicationBootstrap {
  protected readonly logger = new Logger('Media');

  constructor(
    protected readonly commands: CommandBus,
    private readonly kind: 'scan' | 'thumbnail',
    private readonly concurrency: () => number,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.concurrency();
  }

  /** False for jobs of the queue that are not about one file (the stalled-media sweep). */
  protected isFileJob(_job: Job<MediaJobData>): boolean {
    return true;
  }

  @OnWorkerEvent('failed')
  async onFailed(job: Job<MediaJobData> | undefined, error: Error): Promise<void> {
    if (!job || !this.isFileJob(job)) return;
    const unrecoverable = error instanceof UnrecoverableError;
    const final = unrecoverable || job.attemptsMade >= (job.opts.attempts ?? 1);
    const what = this.kind === 'scan' ? 'Scan' : 'Thumbnail';
    this.logger.warn({ jobId: job.id, fileId: job.data.fileId, attempt: job.attemptsMade, final, err: error.message }, `${what} job failed`);
    if (final && !unrecoverable) {
      await this.commands.execute(new RecordMediaFailureCommand(this.kind, job.data, error.message)).catch(() => undefined);
    }
  }
}
