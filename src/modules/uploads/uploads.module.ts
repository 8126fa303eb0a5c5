import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { Transactions } from '../../infra/database/transactions.js';
import { BlobStorage } from '../../infra/storage/blob-storage.js';
import { FilesModule } from '../files/files.module.js';
import { UploadHasher } from '../files/upload/hashing/upload-hasher.js';
import { UploadReceiver } from '../files/upload/upload-receiver.js';
import { LocalUploadBytes } from './bytes/local-upload-bytes.js';
import type { UploadBytes } from './bytes/upload-bytes.js';
import { CompleteResumableUploadHandler } from './commands/complete-resumable-upload.command.js';
import { CreateResumableUploadHandler } from './commands/create-resumable-upload.command.js';
import { RedisUploadLocker } from './redis-upload-locker.js';
import { ResumableUploadPartEntity } from './resumable-upload-part.entity.js';
import { ResumableUploadEntity } from './resumable-upload.entity.js';
import { ResumableUploadExpiry } from './resumable-upload-expiry.js';
import { ResumableUploadRows, ResumableUploadStore } from './resumable-upload.store.js';
import { TusProtocol } from './tus-protocol.js';
import { UploadsController } from './uploads.controller.js';

/** Where the bytes of uploads in progress go, by STORAGE_DRIVER. */
async function uploadBytes(config: AppConfig, rows: ResumableUploadRows, transactions: Transactions): Promise<UploadBytes> {
  if (config.storage.driver === 's3') {
    // The AWS SDK is large; a deployment on local storage never loads it.
    const { S3UploadBytes } = await import('./bytes/s3-upload-bytes.js');
    return new S3UploadBytes({ ...config.storage.s3, bucket: config.storage.s3.bucket ?? '' }, rows, transactions);
  }
  return new LocalUploadBytes(config.storage.dir, rows);
}

/** Resumable uploads (tus 1.0) at /v1/uploads; HTTP server only. */
@Module({
  imports: [TypeOrmModule.forFeature([ResumableUploadEntity, ResumableUploadPartEntity]), FilesModule],
  controllers: [UploadsController],
  providers: [
    {
      provide: ResumableUploadStore,
      inject: [AppConfig, Transactions, UploadReceiver, BlobStorage, Clock, UploadHasher],
      useFactory: async (config: AppConfig, transactions: Transactions, receiver: UploadReceiver, storage: BlobStorage, clock: Clock, hasher: UploadHasher) => {
        const rows = new ResumableUploadRows(transactions, clock, config.resumableUploadExpiryMs);
        return new ResumableUploadStore(await uploadBytes(config, rows, transactions), rows, transactions, receiver, storage, clock, config.resumableUploadExpiryMs, hasher);
      },
    },
    RedisUploadLocker,
    TusProtocol,
    CreateResumableUploadHandler,
    CompleteResumableUploadHandler,
    ResumableUploadExpiry,
  ],
})
export class UploadsModule {}
