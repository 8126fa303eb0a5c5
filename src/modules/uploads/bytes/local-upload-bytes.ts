import { dirname, join } from 'node:path';
import { FileStore } from '@tus/file-store';
import type { KvStore, Upload } from '@tus/utils';
import { blobKeys } from '../../../infra/storage/blob-storage.js';
import type { UploadBytes } from './upload-bytes.js';

/**
 * STORAGE_DRIVER=local: @tus/file-store appending each PATCH to the temporary blob itself
 * (`tmp/<upload id>` under STORAGE_DIR), so the offset is the blob's size and any process sharing
 * the directory can resume.
 */
export class LocalUploadBytes extends FileStore implements UploadBytes {
  readonly readsUnfinished = true;

  constructor(storageDir: string, configstore: KvStore<Upload>) {
    super({ directory: join(storageDir, dirname(blobKeys.temp('x'))), configstore });
  }

  /** The blob is all there is; BlobStorage removes it with the reservation. */
  async discard(): Promise<void> {}
}
