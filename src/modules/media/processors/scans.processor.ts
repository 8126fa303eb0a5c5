import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger, OnApplicationBootstrap } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Job } from 'bullmq';
import { AppConfig } from '../../../config/app-config.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { RecordMediaFailureCommand } from '../commands/record-media-failure.command.js';
import { RescheduleStalledMediaCommand } from '../commands/reschedule-stalled-media.command.js';
import { ScanFileCommand, type ScanOutcome } from '../commands/scan-file.command.js';
import { STALLED_MEDIA_SWEEP } from '../media-jobs.js';
import type { MediaJobData } from '../media-jobs.js';

@Processor(QUEUES.scans)
export class ScansProcessor extends WorkerHost implements OnApplicationBootstrap {
  private readonly logger = new Logger('Media');

  constructor(
    private readonly commands: CommandBus,
    private readonly config: AppConfig,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.config.media.scanConcurrency;
  }

  /** Every failure of a scan (clamd unreachable, storage unreadable) is transient: it retries with backoff. */
  async process(job: Job<MediaJobData>): Promise<ScanOutcome | { scheduled: number }> {
    if (job.name === STALLED_MEDIA_SWEEP) return this.commands.execute(new RescheduleStalledMediaCommand());
    const result = await this.commands.execute(new ScanFileCommand(job.data));
    if (result.outcome === 'recorded' && result.scanStatus === 'skipped') {
      this.logger.log({ jobId: job.id, fileId: job.data.fileId, note: result.note }, 'File not scanned');
    }
    return result;
  }

  @OnWorkerEvent('failed')
  async onFailed(job: Job<MediaJobData> | undefined, error: Error): Promise<void> {
    if (!job || job.name === STALLED_MEDIA_SWEEP) return;
    const final = job.attemptsMade >= (job.opts.attempts ?? 1);
    this.logger.warn({ jobId: job.id, fileId: job.data.fileId, attempt: job.attemptsMade, final, err: error.message }, 'Scan job failed');
    if (final) await this.commands.execute(new RecordMediaFailureCommand('scan', job.data, error.message)).catch(() => undefined);
  }
}
