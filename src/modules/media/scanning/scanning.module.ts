import { Global, Module } from '@nestjs/common';
import { ScanningStatus } from './scanning-status.js';
import { virusScannerProvider } from './virus-scanner.provider.js';

/** The virus scanner and its availability, global because health and the user-info answer report it too. */
@Global()
@Module({
  providers: [virusScannerProvider, ScanningStatus],
  exports: [virusScannerProvider, ScanningStatus],
})
export class ScanningModule {}
