import type { Readable } from 'node:stream';

export type ScanVerdict =
  | { result: 'clean' }
  | { result: 'infected'; threat: string }
  /** The bytes were not examined; `reason` says why (no scanner configured, too large for the scanner). */
  | { result: 'skipped'; reason: string };

export interface ScannerHealth {
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
}

/** The scanner could not give an answer this time (unreachable, timed out, errored): the job retries. */
export class ScannerUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ScannerUnavailableError';
  }
}

/** Used when no CLAMAV_HOST or CLAMAV_SOCKET is set: every file is marked skipped, and says so. */
export class UnconfiguredVirusScanner extends VirusScanner {
  async scan(content: Readable): Promise<ScanVerdict> {
    content.destroy();
    return { result: 'skipped', reason: 'no virus scanner is configured (set CLAMAV_HOST or CLAMAV_SOCKET)' };
  }

  async check(): Promise<ScannerHealth> {
    return { configured: false };
  }
}
