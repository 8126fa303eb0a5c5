import { Processor } from '@nestjs/bullmq';
import { CommandBus } from '@nestjs/cqrs';
import { Job } from 'bullmq';
import { AppConfig } from '../../../config/app-config.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { RescheduleStalledMediaCommand } from '../commands/reschedule-stalled-media.command.js';
import { ScanFileCommand, type ScanOutcome } from '../commands/scan-file.command.js';
import { STALLED_MEDIA_SWEEP } from '../media-jobs.js';
import type { MediaJobData } from '../media-jobs.js';
import { MediaJobProcessor } from './media-job.processor.js';

@Processor(QUEUES.scans)
export class ScansProcessor extends MediaJobProcessor {
  constructor(commands: CommandBus, config: AppConfig) {
    super(commands, 'scan', () => config.media.scanConcurrency);
  }

  /** Every failure of a scan (clamd unreachable, storage unreadable) is transient: it retries with backoff. */
  async process(job: Job<MediaJobData>): Promise<ScanOutcome | { scheduled: number }> {
    if (job.name === STALLED_MEDIA_SWEEP) return this.commands.execute(new RescheduleStalledMediaCommand());
    const result = await this.commands.execute(new ScanFileCommand(job.data, job.attemptsMade));
    if (result.outcome === 'recorded' && result.scanStatus === 'skipped') {
      this.logger.log({ jobId: job.id, fileId: job.data.fileId, note: result.note }, 'File not scanned');
    }
    return result;
  }

  protected override isFileJob(job: Job<MediaJobData>): boolean {
    return job.name !== STALLED_MEDIA_SWEEP;
  }
}
