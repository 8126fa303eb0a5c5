import { Injectable } from '@nestjs/common';
import { type Scanning, scanningOf, VirusScanner } from './virus-scanner.js';

/** How long one answer from the scanner is reused, so per-request reads (GET /v1/user/info) do not ping clamd each time. */
const FRESH_FOR_MS = 10_000;

/** Whether uploads are being scanned now: `active` while the scanner answers, otherwise `unavailable`. */
@Injectable()
export class ScanningStatus {
  private last: { at: number; scanning: Promise<Scanning> } | null = null;

  constructor(private readonly scanner: VirusScanner) {}

  current(): Promise<Scanning> {
    const now = Date.now();
    if (!this.last || now - this.last.at > FRESH_FOR_MS) {
      this.last = { at: now, scanning: this.scanner.check().then(scanningOf, () => 'unavailable' as const) };
    }
    return this.last.scanning;
  }
}
