import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { MediaTools } from './thumbnails/media-tools.js';
import { VirusScanner } from './scanning/virus-scanner.js';

/** Tells the operator at start what background media work cannot do on this machine. */
@Injectable()
export class MediaStartupCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger('Media');

  constructor(
    private readonly tools: MediaTools,
    private readonly scanner: VirusScanner,
  ) {}

  onApplicationBootstrap(): void {
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
    if (!scanner.configured) this.logger.warn('No virus scanner configured (CLAMAV_HOST or CLAMAV_SOCKET): uploads are marked scan_status "skipped"');
    else if (!scanner.reachable) this.logger.warn(`clamd at ${scanner.address} is not reachable (${scanner.error}); scans will retry`);
  }
}
