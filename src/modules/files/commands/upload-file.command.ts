import { Logger } from '@nestjs/common';
import { type EntityManager, IsNull } from 'typeorm';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound, StorageExceeded } from '../../../common/errors/api-error.js';
import { newId } from '../../../common/ids.js';
import { insertRows } from '../../../infra/database/insert-rows.js';
import { isUniqueViolation, Transactions } from '../../../infra/database/transactions.js';
import { Outbox } from '../../../infra/outbox/outbox.js';
import { BlobPlacements } from '../../../infra/storage/blob-placements.js';
import { BlobStorage, BlobStoreUnavailable, blobKeys } from '../../../infra/storage/blob-storage.js';
import { UrlSigner } from '../../../infra/storage/url-signer.js';
import { findFolderToFill } from '../../folders/folder-tree-lock.js';
import { FileResponse } from '../dto/file.response.js';
import { fileUploaded } from '../events/file-events.js';
import { FileEntity } from '../file.entity.js';
import { acceptedName, nameKeyOf } from '../file-naming.js';
import { categoryOf, detectMimeType } from '../file-type-detection.js';
import { freeFileName, retryOnNameCollision } from '../name-collisions.js';
import { changeStorageUsage, refuseOverQuota } from '../storage-usage.js';
import { FinishedUploads } from '../upload/finished-uploads.js';
import { UploadSweeper } from '../upload/upload-sweeper.js';
import { ServerInstance } from '../../../infra/instances/server-instance.js';
import type { ReceivedUpload } from '../upload/upload-receiver.js';
import { UploadReservationEntity } from '../upload/upload-reservation.entity.js';

export class UploadFileCommand extends Command<FileResponse> {
  constructor(
    readonly actor: Actor,
    readonly upload: ReceivedUpload,
    readonly name: string,
    readonly folderId: string | null,
    readonly overwrite: boolean,
    /**
     * What a folder deleted since the upload began means: refused (404) for a multipart upload, whose client still
     * has the bytes; the root for a resumable one, whose bytes would otherwise be lost (as a restore does).
     */
    readonly whenFolderIsGone: 'refuse' | 'use-root' = 'refuse',
  ) {
    super();
  }
}

/**
 * Turns bytes already in temporary storage into a file: one transaction creates (or, with
 * overwrite, updates) the row, charges the quota (a small upload) or hands the upload's reserved
 * quota over to used storage (a large one), and records file.uploaded; only after it commits does
 * the blob move to its final key. The scan and thumbnail jobs are queued in bulk by the outbox relay
 * from file.uploaded (media module), not one by one here. What is left after the answer (blobs an
 * overwrite replaced, the finished reservation row) is done in the background by FinishedUploads.
 */
@CommandHandler(UploadFileCommand)
export class UploadFileHandler implements ICommandHandler<UploadFileCommand> {
  private readonly logger = new Logger('UploadFileHandler');

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
    private readonly signer: UrlSigner,
    private readonly clock: Clock,
    private readonly instance: ServerInstance,
    private readonly finished: FinishedUploads,
    private readonly placements: BlobPlacements,
    private readonly sweeper: UploadSweeper,
  ) {}

  async execute({ actor, upload, name: requestedName, folderId: requestedFolderId, overwrite: requestedOverwrite, whenFolderIsGone }: UploadFileCommand): Promise<FileResponse> {
    const name = acceptedName(requestedName);
    const mimeType = await detectMimeType(upload.head, name);
    const now = this.clock.now();
    let folderId = requestedFolderId;
    let overwrite = requestedOverwrite;
    // A new name is tried as it is; only when taken (a unique violation) is the folder looked at.
    let nameMayBeTaken = overwrite;
    // The blob key of each attempt, registered before its COMMIT: jobs for it wait until the blob is in place.
    const placing: Array<() => void> = [];
    const committed = await retryOnNameCollision(() =>
      this.transactions
        .run(async (tx) => {
          if (folderId !== null) {
            const folder = await findFolderToFill(tx, actor.accountId, folderId);
            if (!folder && whenFolderIsGone === 'refuse') throw new NotFound('folder', folderId);
            if (!folder) {
              // Into the root, never replacing a file there that the client did not mean.
              folderId = null;
              overwrite = false;
            }
          }
          const folderKey = folderId ?? '';
          const files = tx.getRepository(FileEntity);
          const existing = nameMayBeTaken
            ? await files.findOne({
                where: { accountId: actor.accountId, folderKey, nameKey: nameKeyOf(name), state: 'active' },
                // An overwrite changes storage by the difference to the replaced size: that size must not change meanwhile.
                ...(overwrite ? this.transactions.dialect.lockForUpdate<FileEntity>() : {}),
              })
            : null;
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
            await insertFile(tx, file);
          }
          placing.push(this.placements.begin(file.blobKey));
          const obsoleteBlobKeys = replacedBlobs.length > 0 ? JSON.stringify(replacedBlobs) : null;
          await Outbox.record(tx, fileUploaded(file, now));
          if (upload.quotaAtCommit) {
            // The row names the file until its blob is in place: if this process dies before, the sweeper finishes the move.
            await insertRows(tx, 'upload_reservations', [{
              id: upload.uploadId,
              account_id: actor.accountId,
              bytes: 0,
              temp_key: upload.tempKey,
              created_at: now.toISOString(),
              updated_at: now.toISOString(),
              instance_id: this.instance.id,
              file_id: file.id,
              obsolete_blob_keys: obsoleteBlobKeys,
            }]);
            // Last before COMMIT: the account row stays locked from here to the commit only.
            const account = await changeStorageUsage(tx, actor.accountId, { used: usedChange, mustFit: true }, now);
            if (!account) throw new DoesNotFit();
          } else {
            // The reservation's bytes become used storage; the row stays, naming the file, until the blobs are in place.
            const reservation = await tx
              .getRepository(UploadReservationEntity)
              .update({ id: upload.uploadId, fileId: IsNull() }, { bytes: 0, fileId: file.id, obsoleteBlobKeys, updatedAt: now });
            const account = (await changeStorageUsage(tx, actor.accountId, { used: usedChange, reserved: reservation.affected ? -upload.reserved : 0 }, now))!;
            // Room lent by the file an overwrite meant to replace: refused if that file is no longer what this commit replaces.
            if (upload.reservedAgainstReplaced && account.storageUsed + account.storageReserved > account.storageLimit) {
              throw new StorageExceeded(account.storageUsed - usedChange, account.storageLimit, upload.size);
            }
          }
          return { file, replacedBlobs };
        })
        .catch((error: unknown) => {
          if (isUniqueViolation(error)) nameMayBeTaken = true;
          throw error;
        }),
    ).catch(async (error: unknown) => {
      for (const done of placing) done();
      // Rolled back; the refusal and its user.quota_exceeded event are recorded on their own.
      if (error instanceof DoesNotFit) throw await this.transactions.run((tx) => refuseOverQuota(tx, actor.accountId, upload.size, now));
      throw error;
    });
    const { file, replacedBlobs } = committed;
    try {
      await this.storage.move(upload.tempKey, file.blobKey);
      this.finished.afterAnswer({ uploadId: upload.uploadId, fileId: file.id, blobKey: file.blobKey }, replacedBlobs);
    } catch (error) {
      if (!(error instanceof BlobStoreUnavailable)) throw error;
      // The file is stored (its row committed, its bytes safe at the temporary key): an error would make the client
      // upload it twice. Downloads answer 503 until the sweeper, retrying every few seconds, has moved the bytes.
      await this.sweeper.finishSoon(upload.uploadId).catch((e: unknown) => this.logger.warn({ err: e, uploadId: upload.uploadId }, 'Could not hand a blob move to the sweeper; it will find it within the hour'));
    } finally {
      // Media jobs queued from file.uploaded wait for this (BlobPlacements); a failed move's row is the sweeper's.
      for (const done of placing) done();
    }
    return FileResponse.from(file, this.signer, now);
  }
}

/** A new file's row, as FileEntity's columns store it (timestamps as ISO strings). */
function insertFile(tx: EntityManager, file: FileEntity): Promise<void> {
  return insertRows(tx, 'files', [{
    id: file.id,
    account_id: file.accountId,
    folder_id: file.folderId,
    folder_key: file.folderKey,
    name: file.name,
    name_key: file.nameKey,
    size: file.size,
    mime_type: file.mimeType,
    category: file.category,
    md5: file.md5,
    blob_key: file.blobKey,
    state: file.state,
    scan_status: file.scanStatus,
    thumbnail_key: file.thumbnailKey,
    uploaded_by: file.uploadedBy,
    created_at: file.createdAt.toISOString(),
    modified_at: file.modifiedAt.toISOString(),
    deleted_at: file.deletedAt?.toISOString() ?? null,
    deleted_by: file.deletedBy,
    recoverable_until: file.recoverableUntil?.toISOString() ?? null,
  }]);
}

/** Thrown to roll the commit back when a small upload does not fit the quota. */
class DoesNotFit extends Error {}
