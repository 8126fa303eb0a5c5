import type { Provider } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { ClamdScanner } from './clamd-scanner.js';
import { UnconfiguredVirusScanner, VirusScanner } from './virus-scanner.js';

/** clamd when CLAMAV_SOCKET or CLAMAV_HOST is set (the socket wins), otherwise no scanner. */
export const virusScannerProvider: Provider = {
  provide: VirusScanner,
  inject: [AppConfig],
  useFactory: ({ clamav }: AppConfig): VirusScanner => {
    if (!clamav) return new UnconfiguredVirusScanner();
    return new ClamdScanner('socket' in clamav ? { socket: clamav.socket } : { host: clamav.host, port: clamav.port }, clamav.timeoutMs, clamav.maxStreamBytes);
  },
};
