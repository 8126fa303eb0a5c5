import { type FileStorageOptions, HttpClient } from './http.js';
import { ApiKeys, Events, Files, Folders, Shares, Trash, Uploads, User, Webhooks } from './resources.js';

const MiB = 1024 * 1024;

/** The File Storage Service API: one object per account key, every resource hanging off it. */
export class FileStorage {
  readonly files: Files;
  /** Resumable uploads you drive yourself (`files.upload` uses them on its own for large files). */
  readonly uploads: Uploads;
  readonly trash: Trash;
  readonly folders: Folders;
  readonly shares: Shares;
  readonly webhooks: Webhooks;
  readonly events: Events;
  readonly apiKeys: ApiKeys;
  readonly user: User;

  constructor(options: FileStorageOptions) {
    const http = new HttpClient(options);
    const resumable = {
      thresholdBytes: options.resumableThresholdBytes ?? 64 * MiB,
      chunkBytes: options.resumableChunkBytes ?? 8 * MiB,
      retryMs: options.resumableRetryMs ?? 80_000,
    };
    this.files = new Files(http, resumable);
    this.uploads = new Uploads(http, this.files, resumable);
    this.trash = new Trash(http);
    this.folders = new Folders(http);
    this.shares = new Shares(http);
    this.webhooks = new Webhooks(http);
    this.events = new Events(http);
    this.apiKeys = new ApiKeys(http);
    this.user = new User(http);
  }
}
