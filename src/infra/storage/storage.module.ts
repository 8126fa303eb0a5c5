import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { BlobDeletions } from './blob-deletions.js';
import { BlobPlacements } from './blob-placements.js';
import { BlobStorage } from './blob-storage.js';
import { LocalBlobStorage } from './local-blob-storage.js';
import { UrlSigner } from './url-signer.js';

/** Blob storage chosen by STORAGE_DRIVER, the signer for download and thumbnail URLs, the blobs still being placed and those to delete. */
@Global()
@Module({
  providers: [
    {
      provide: BlobStorage,
      inject: [AppConfig],
      useFactory: async (config: AppConfig): Promise<BlobStorage> => {
        if (config.storage.driver === 's3') {
          // The AWS SDK is large; a deployment on local storage never loads it.
          const { S3BlobStorage } = await import('./s3-blob-storage.js');
          return new S3BlobStorage({ ...config.storage.s3, bucket: config.storage.s3.bucket ?? '' });
        }
        return new LocalBlobStorage(config.storage.dir);
      },
    },
    UrlSigner,
    BlobPlacements,
    BlobDeletions,
  ],
  exports: [BlobStorage, UrlSigner, BlobPlacements, BlobDeletions],
})
export class StorageModule {}
