import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { FileTooLarge, NotFound } from '../../../common/errors/api-error.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { blobKeys } from '../../../infra/storage/blob-storage.js';
import { AccountEntity } from '../../accounts/account.entity.js';
import { PLANS } from '../../accounts/plans.js';
import { refuseOverQuota, tryReserveStorage } from '../../files/storage-usage.js';
import { UploadReservationEntity } from '../../files/upload/upload-reservation.entity.js';
import { FolderEntity } from '../../folders/folder.entity.js';
import { ResumableUploadEntity } from '../resumable-upload.entity.js';
import { resumableUploadTarget } from '../upload-metadata.js';

export class CreateResumableUploadCommand extends Command<ResumableUploadEntity> {
  constructor(
    readonly actor: Actor,
    readonly uploadId: string,
    /** Upload-Length, or null when the client defers it. */
    readonly length: number | null,
    readonly metadata: Record<string, string | null> | undefined,
  ) {
    super();
  }
}

/**
 * Checks a tus creation request as the multipart upload checks its form (name, folder, overwrite,
 * the plan's maximum size, the quota) and, in one transaction, reserves the upload's quota and
 * records it. The whole Upload-Length is reserved at once, so resumable and multipart uploads
 * together can never promise more than the quota. A deferred length reserves the plan's maximum
 * file size, or what is left of the quota when that is less, until the length is declared; its
 * bytes are held to the plan and the quota as they stream (see ResumableUploadStore).
 */
@CommandHandler(CreateResumableUploadCommand)
export class CreateResumableUploadHandler implements ICommandHandler<CreateResumableUploadCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async execute({ actor, uploadId, length, metadata }: CreateResumableUploadCommand): Promise<ResumableUploadEntity> {
    const target = resumableUploadTarget(metadata);
    const plan = PLANS[actor.plan];
    if (length !== null && length > plan.maxFileSize) throw new FileTooLarge(length, plan.maxFileSize, plan.name);
    let reserve = length ?? plan.maxFileSize;
    const now = this.clock.now();
    const created = await this.transactions.run(async (tx) => {
      if (target.folderId !== null) {
        const folder = await tx.getRepository(FolderEntity).findOneBy({ id: target.folderId, accountId: actor.accountId, state: 'active' });
        if (!folder) throw new NotFound('folder', target.folderId);
      }
      if (!(await tryReserveStorage(tx, actor.accountId, reserve))) {
        if (length !== null) return null;
        // A deferred upload whose plan maximum does not fit holds what is left; its bytes ask for more as they stream.
        const account = await tx.getRepository(AccountEntity).findOneByOrFail({ id: actor.accountId });
        reserve = Math.max(0, account.storageLimit - account.storageUsed - account.storageReserved);
        if (!(await tryReserveStorage(tx, actor.accountId, reserve))) return null;
      }
      await tx.getRepository(UploadReservationEntity).insert({
        id: uploadId,
        accountId: actor.accountId,
        bytes: reserve,
        tempKey: blobKeys.temp(uploadId),
        createdAt: now,
        updatedAt: now,
        // No process owns a resumable upload between its requests; its expiry, not a heartbeat, ends it.
        instanceId: null,
      });
      const upload = Object.assign(new ResumableUploadEntity(), {
        id: uploadId,
        accountId: actor.accountId,
        ...target,
        length,
        metadata: JSON.stringify(metadata ?? {}),
        createdAt: now,
        expiresAt: new Date(now.getTime() + this.config.resumableUploadExpiryMs),
        fileId: null,
      });
      await tx.getRepository(ResumableUploadEntity).insert(upload);
      return upload;
    });
    if (created) return created;
    // Recorded in its own transaction, as the multipart upload does: the refused upload changes nothing else.
    throw await this.transactions.run((tx) => refuseOverQuota(tx, actor.accountId, reserve, this.clock.now()));
  }
}
