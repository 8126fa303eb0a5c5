/**
 * Published on the CQRS event bus after an upload (or an overwrite) has committed: new bytes
 * exist for this file, so background work (thumbnails, virus scan) can start.
 */
export class FileStoredEvent {
  constructor(
    readonly fileId: string,
    readonly accountId: string,
    readonly blobKey: string,
  ) {}
}
