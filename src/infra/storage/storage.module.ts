import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { BlobStorage } from './blob-storage.js';
import { LocalBlobStorage } from './local-blob-storage.js';
import { UrlSigner } from './url-signer.js';

/** Blob storage chosen by STORAGE_DRIVER, and the signer for download and thumbnail URLs. */
@Global()
@Module({
  providers: [
    {
      provide: BlobStorage,
      inject: [AppConfig],
      useFactory: (config: AppConfig): BlobStorage => {
        if (config.storage.driver === 's3') throw new Error('STORAGE_DRIVER=s3 is not available yet');
        return new LocalBlobStorage(config.storage.dir);
      },
    },
    UrlSigner,
  ],
  exports: [BlobStorage, UrlSigner],
})
export class StorageModule {}
