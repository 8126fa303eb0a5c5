import { statSync } from 'node:fs';
import type { Provider } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { ClamdScanner } from './clamd-scanner.js';
import { UnconfiguredVirusScanner, VirusScanner } from './virus-scanner.js';

/**
 * clamd at CLAMAV_SOCKET or CLAMAV_HOST (the socket wins). Without either, clamd at Debian's default socket when
 * one exists there at start-up, so an installed clamav-daemon scans without configuration; otherwise no scanner,
 * which start-up, /health and GET /v1/user/info report as `scanning: "unavailable"`.
 */
export const virusScannerProvider: Provider = {
  provide: VirusScanner,
  inject: [AppConfig],
  useFactory: ({ clamav }: AppConfig): VirusScanner => {
    if (!clamav.configured && 'socket' in clamav && !isSocket(clamav.socket)) {
      return new UnconfiguredVirusScanner(`no virus scanner is configured (CLAMAV_SOCKET or CLAMAV_HOST) and none listens at ${clamav.socket}, Debian's default`);
    }
    return new ClamdScanner('socket' in clamav ? { socket: clamav.socket } : { host: clamav.host, port: clamav.port }, clamav.timeoutMs, clamav.maxStreamBytes);
  },
};

function isSocket(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isSocket() ?? false;
}
