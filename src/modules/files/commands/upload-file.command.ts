import { Logger } from '@nestjs/common';
import { IsNull } from 'typeorm';
import { Command, CommandHandler, EventBus, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { InvalidRequest, NotFound, StorageExceeded } from '../../../common/errors/api-error.js';
import { newId } from '../../../common/ids.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { Outbox } from '../../../infra/outbox/outbox.js';
import { BlobStorage, blobKeys } from '../../../infra/storage/blob-storage.js';
import { UrlSigner } from '../../../infra/storage/url-signer.js';
import { FolderEntity } from '../../folders/folder.entity.js';
import { FileResponse } from '../dto/file.response.js';
import { fileUploaded } from '../events/file-events.js';
import { FileStoredEvent } from '../events/file-stored.event.js';
import { FileEntity } from '../file.entity.js';
import { acceptedName, nameKeyOf } from '../file-naming.js';
import { categoryOf, detectMimeType } from '../file-type-detection.js';
import { freeFileName, retryOnNameCollision } from '../name-collisions.js';
import { changeStorageUsage } from '../storage-usage.js';
import type { ReceivedUpload } from '../upload/upload-receiver.js';
import { UploadReservationEntity } from '../upload/upload-reservation.entity.js';

export class UploadFileCommand extends Command<FileResponse> {
  constructor(
    readonly actor: Actor,
    readonly upload: ReceivedUpload,
    readonly name: string,
    readonly folderId: string | null,
    readonly overwrite: boolean,
  ) {
    super();
  }
}

/**
 * Turns bytes already in temporary storage into a file: one transaction creates (or, with
 * overwrite, updates) the row, hands the upload's reserved quota over to used storage and records
 * file.uploaded; only after it commits does the blob move to its final key and FileStoredEvent go out.
 */
@CommandHandler(UploadFileCommand)
export class UploadFileHandler implements ICommandHandler<UploadFileCommand> {
  private readonly logger = new Logger('UploadFile');

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
    private readonly signer: UrlSigner,
    private readonly clock: Clock,
    private readonly events: EventBus,
  ) {}

  async execute({ actor, upload, name: requestedName, folderId, overwrite }: UploadFileCommand): Promise<FileResponse> {
    const name = acceptedName(requestedName);
    const mimeType = await detectMimeType(upload.head, name);
    const now = this.clock.now();
    const { file, replacedBlobs } = await retryOnNameCollision(() =>
      this.transactions.run(async (tx) => {
        if (folderId !== null) {
          const folder = await tx.getRepository(FolderEntity).findOneBy({ id: folderId, accountId: actor.accountId, state: 'active' });
          if (!folder) throw new NotFound('folder', folderId);
        }
        const folderKey = folderId ?? '';
        const files = tx.getRepository(FileEntity);
        const existing = await files.findOneBy({ accountId: actor.accountId, folderKey, nameKey: nameKeyOf(name), state: 'active' });
        const content = {
          size: upload.size,
          mimeType,
          category: categoryOf(mimeType),
          md5: upload.md5,
          scanStatus: 'pending' as const,
          thumbnailKey: null,
          modifiedAt: now,
        };
        let file: FileEntity;
        let replacedBlobs: string[] = [];
        let usedChange = upload.size;
        if (existing && overwrite) {
          // Same id and created_at; new bytes under a new key, the old ones removed after commit.
          replacedBlobs = [existing.blobKey, existing.thumbnailKey].filter((k): k is string => !!k);
          usedChange = upload.size - existing.size;
          file = Object.assign(existing, content, { blobKey: blobKeys.file(actor.accountId, existing.id, upload.uploadId) });
          await files.save(file);
        } else {
          const id = newId('file');
          const finalName = existing ? await freeFileName(tx, actor.accountId, folderKey, name) : name;
          file = Object.assign(new FileEntity(), content, {
            id,
            accountId: actor.accountId,
            folderId,
            folderKey,
            name: finalName,
            nameKey: nameKeyOf(finalName),
            blobKey: blobKeys.file(actor.accountId, id, upload.uploadId),
            state: 'active' as const,
            uploadedBy: actor.userId,
            createdAt: now,
            deletedAt: null,
            deletedBy: null,
            recoverableUntil: null,
          });
          await files.insert(file);
        }
        // The reservation's bytes become used storage; the row stays, naming the file, until the blobs are in place.
        const reservation = await tx
          .getRepository(UploadReservationEntity)
          .update(
            { id: upload.uploadId, fileId: IsNull() },
            { bytes: 0, fileId: file.id, obsoleteBlobKeys: replacedBlobs.length > 0 ? JSON.stringify(replacedBlobs) : null, updatedAt: now },
          );
        const account = await changeStorageUsage(tx, actor.accountId, { used: usedChange, reserved: reservation.affected ? -upload.reserved : 0 }, now);
        // Room lent by the file an overwrite meant to replace: refused if that file is no longer what this commit replaces.
        if (upload.reservedAgainstReplaced && account.storageUsed + account.storageReserved > account.storageLimit) {
          throw new StorageExceeded(account.storageUsed - usedChange, account.storageLimit, upload.size);
        }
        await Outbox.record(tx, fileUploaded(file, now));
        return { file, replacedBlobs };
      }),
    );
    await this.storage.move(upload.tempKey, file.blobKey);
    let replacedDeleted = true;
    for (const key of replacedBlobs) {
      await this.storage.delete(key).catch((error: unknown) => {
        replacedDeleted = false;
        this.logger.warn({ err: error, key }, 'Could not delete a replaced blob; the upload sweeper will retry');
      });
    }
    if (replacedDeleted) {
      await this.transactions
        .run((tx) => tx.getRepository(UploadReservationEntity).delete({ id: upload.uploadId }))
        .catch((error: unknown) => this.logger.warn({ err: error, uploadId: upload.uploadId }, 'Could not remove a finished upload reservation'));
    }
    this.events.publish(new FileStoredEvent(file.id, file.accountId, file.blobKey));
    return FileResponse.from(file, this.signer, now);
  }
}

/** Parses the multipart `overwrite` field: true/false (also 1/0), anything else is refused. */
export function parseOverwrite(value: unknown): boolean {
  if (value === undefined || value === '') return false;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw InvalidRequest.fields([{ field: 'overwrite', message: 'must be true or false' }]);
}
