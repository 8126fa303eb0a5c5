import { tmpdir } from 'node:os';
import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { QUEUES } from '../../infra/queue/queue-names.js';
import { STALLED_MEDIA_SWEEP, STALLED_MEDIA_SWEEP_EVERY_MS } from './media-jobs.js';
import { MediaTools } from './thumbnails/media-tools.js';
import { removeOrphanedThumbnailWorkdirs } from './thumbnails/thumbnail-workdirs.js';
import { VirusScanner } from './scanning/virus-scanner.js';

/**
 * At start: tells the operator what background media work cannot do here, schedules the stalled-work sweep, and
 * removes thumbnail work dirs of processes that died mid-job.
 */
@Injectable()
export class MediaStartup implements OnApplicationBootstrap {
  private readonly logger = new Logger('Media');

  constructor(
    private readonly tools: MediaTools,
    private readonly scanner: VirusScanner,
    @InjectQueue(QUEUES.scans) private readonly scans: Queue,
  ) {}

  onApplicationBootstrap(): void {
    // Upserted, so every server process declares the same single schedule.
    void this.scans
      .upsertJobScheduler(STALLED_MEDIA_SWEEP, { every: STALLED_MEDIA_SWEEP_EVERY_MS }, { name: STALLED_MEDIA_SWEEP, data: {} })
      .catch((error: unknown) => this.logger.error({ err: error }, 'Could not schedule the stalled media sweep'));
    void removeOrphanedThumbnailWorkdirs()
      .then((removed) => removed > 0 && this.logger.log(`Removed ${removed} thumbnail work dir(s) left in ${tmpdir()} by a process that died mid-job`))
      .catch((error: unknown) => this.logger.warn({ err: error }, 'Could not remove thumbnail work dirs left by dead processes'));
    // Not awaited: a slow or absent clamd must not delay the server's start.
    void this.report().catch((error: unknown) => this.logger.warn({ err: error }, 'Media start-up check failed'));
  }

  private async report(): Promise<void> {
    const tools = await this.tools.status();
    for (const [name, status] of Object.entries(tools)) {
      if (!status.available) {
        this.logger.warn(`${name} is not installed: no ${status.needed_for} (Debian: apt-get install -y ffmpeg poppler-utils)`);
      }
    }
    const scanner = await this.scanner.check();
    if (!scanner.configured) {
      this.logger.warn(`VIRUS SCANNING IS OFF: ${scanner.error}. Uploads are NOT scanned (scan_status "skipped"); install clamav-daemon or set CLAMAV_SOCKET or CLAMAV_HOST`);
    }
    else if (!scanner.reachable) this.logger.warn(`Virus scanner not reachable, scans will retry: ${scanner.error}`);
  }
}
