import type { Readable } from 'node:stream';

export type ScanVerdict =
  | { result: 'clean' }
  | { result: 'infected'; threat: string }
  /** The bytes were not examined; `reason` says why (no scanner configured, too large for the scanner). */
  | { result: 'skipped'; reason: string };

/** What clients and operators are told: are new uploads being scanned right now? */
export type Scanning = 'active' | 'unavailable';

export interface ScannerHealth {
  /** False when no scanner was set and none was found at Debian's default socket: nothing is scanned. */
  configured: boolean;
  /** Where the scanner listens (tcp://host:port or unix:/path); absent when none is configured. */
  address?: string;
  reachable?: boolean;
  error?: string;
}

/**
 * Virus scanning, behind a port so the scan job does not care which engine answers.
 * Adapters: clamd (INSTREAM over TCP or a UNIX socket) and "not configured".
 */
export abstract class VirusScanner {
  /**
   * Scans the bytes as they stream, never holding the whole file; `size` lets an adapter skip what it cannot
   * take without sending it. Rejects when the scanner cannot answer (worth a retry).
   */
  abstract scan(content: Readable, size: number): Promise<ScanVerdict>;
  abstract check(): Promise<ScannerHealth>;
  /** The verdict when it needs no bytes (no scanner, a file larger than it takes), so the blob is not opened at all; else null. */
  verdictWithoutBytes(_size: number): ScanVerdict | null {
    return null;
  }
}

/** The scanner could not give an answer this time (unreachable, timed out, errored): the job retries. */
export class ScannerUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ScannerUnavailableError';
  }
}

/**
 * The scanner cut the stream short and is alive: it refused the rest as too large (a limit lower than it was
 * told), or it restarted mid-scan. Only a cut that happens again tells them apart, so the first one retries and
 * `verdictIfRepeated` is the verdict when it repeats.
 */
export class ScanCutShortError extends ScannerUnavailableError {
  constructor(
    message: string,
    readonly verdictIfRepeated: ScanVerdict,
  ) {
    super(message);
    this.name = 'ScanCutShortError';
  }
}

export function scanningOf(health: ScannerHealth): Scanning {
  return health.reachable ? 'active' : 'unavailable';
}

/** Used when no scanner was set and none listens at Debian's default socket: every file is marked skipped, and says why. */
export class UnconfiguredVirusScanner extends VirusScanner {
  constructor(private readonly reason: string) {
    super();
  }

  async scan(content: Readable): Promise<ScanVerdict> {
    content.destroy();
    return { result: 'skipped', reason: this.reason };
  }

  override verdictWithoutBytes(): ScanVerdict {
    return { result: 'skipped', reason: this.reason };
  }

  async check(): Promise<ScannerHealth> {
    return { configured: false, reachable: false, error: this.reason };
  }
}
