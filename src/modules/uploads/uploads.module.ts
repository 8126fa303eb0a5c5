import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { Transactions } from '../../infra/database/transactions.js';
import { FilesModule } from '../files/files.module.js';
import { UploadReceiver } from '../files/upload/upload-receiver.js';
import { CompleteResumableUploadHandler } from './commands/complete-resumable-upload.command.js';
import { CreateResumableUploadHandler } from './commands/create-resumable-upload.command.js';
import { RedisUploadLocker } from './redis-upload-locker.js';
import { ResumableUploadEntity } from './resumable-upload.entity.js';
import { ResumableUploadExpiry } from './resumable-upload-expiry.js';
import { ResumableUploadRows, ResumableUploadStore } from './resumable-upload.store.js';
import { TusProtocol } from './tus-protocol.js';
import { UploadsController } from './uploads.controller.js';

/** Resumable uploads (tus 1.0) at /v1/uploads; HTTP server only. */
@Module({
  imports: [TypeOrmModule.forFeature([ResumableUploadEntity]), FilesModule],
  controllers: [UploadsController],
  providers: [
    {
      provide: ResumableUploadStore,
      inject: [AppConfig, Transactions, UploadReceiver, Clock],
      useFactory: (config: AppConfig, transactions: Transactions, receiver: UploadReceiver, clock: Clock) =>
        new ResumableUploadStore(
          config.storage.dir,
          config.resumableUploadExpiryMs,
          new ResumableUploadRows(transactions, clock, config.resumableUploadExpiryMs),
          transactions,
          receiver,
          clock,
        ),
    },
    RedisUploadLocker,
    TusProtocol,
    CreateResumableUploadHandler,
    CompleteResumableUploadHandler,
    ResumableUploadExpiry,
  ],
})
export class UploadsModule {}
