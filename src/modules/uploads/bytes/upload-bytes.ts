import type { DataStore } from '@tus/utils';
import type { ResumableUploadEntity } from '../resumable-upload.entity.js';

/**
 * Where a resumable upload's bytes go while it is in progress, by storage driver: a @tus store
 * whose finished upload is the temporary blob `tmp/<upload id>` of BlobStorage, which the
 * multipart upload's commit then moves into place. ResumableUploadStore wraps it with our rules.
 */
export interface UploadBytes extends DataStore {
  /** Whether the bytes of an unfinished upload can be read back through BlobStorage (to hash them). */
  readonly readsUnfinished: boolean;
  /** Removes what an unfinished upload stored besides its temporary blob; safe to call twice. */
  discard(upload: ResumableUploadEntity): Promise<void>;
}
