import { Command, CommandBus, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { ApiError, NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { ServerInstance } from '../../../infra/instances/server-instance.js';
import { UploadFileCommand } from '../../files/commands/upload-file.command.js';
import { UploadReservationEntity } from '../../files/upload/upload-reservation.entity.js';
import { RedisUploadLocker } from '../redis-upload-locker.js';
import { ResumableUploadEntity } from '../resumable-upload.entity.js';
import { ResumableUploadStore } from '../resumable-upload.store.js';
import { forgetRow } from '../tus-request.js';

/** Answers the id of the file the upload became. */
export class CompleteResumableUploadCommand extends Command<string> {
  constructor(
    readonly actor: Actor,
    readonly uploadId: string,
  ) {
    super();
  }
}

/**
 * Turns a fully received resumable upload into a file through the multipart upload's own commit
 * (UploadFileCommand: type detection, numbered suffix or overwrite, quota reserved -> used,
 * file.uploaded, then scan and thumbnail). Under the upload's lock and idempotent: completing again
 * (a retried last PATCH, from any process) answers the same file. An upload whose folder was deleted
 * meanwhile lands in the root. A refusal at commit releases the upload, as a refused multipart
 * upload is released.
 */
@CommandHandler(CompleteResumableUploadCommand)
export class CompleteResumableUploadHandler implements ICommandHandler<CompleteResumableUploadCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly commands: CommandBus,
    private readonly store: ResumableUploadStore,
    private readonly locker: RedisUploadLocker,
    private readonly instance: ServerInstance,
  ) {}

  execute({ actor, uploadId }: CompleteResumableUploadCommand): Promise<string> {
    return this.locker.holding(uploadId, async () => {
      const { upload, reservation } = await this.transactions.run(async (tx) => ({
        upload: await tx.getRepository(ResumableUploadEntity).findOneBy({ id: uploadId, accountId: actor.accountId }),
        reservation: await tx.getRepository(UploadReservationEntity).findOneBy({ id: uploadId }),
      }));
      if (!upload) throw new NotFound('upload', uploadId);
      // The file row committed before (the reservation names it until its blob is in place).
      const committed = upload.fileId ?? reservation?.fileId;
      if (committed) return this.recordFile(uploadId, committed);
      if (!reservation) throw new NotFound('upload', uploadId);
      const received = await this.store.received(upload, reservation.bytes);
      // From here this process owns the commit: if it dies, the upload sweeper finishes the move.
      await this.transactions.run((tx) => tx.getRepository(UploadReservationEntity).update({ id: uploadId }, { instanceId: this.instance.id }));
      try {
        const file = await this.commands.execute(new UploadFileCommand(actor, received, upload.name, upload.folderId, upload.overwrite, 'use-root'));
        return await this.recordFile(uploadId, file.id);
      } catch (error) {
        if (error instanceof ApiError) await this.store.forget(uploadId, upload);
        throw error;
      }
    });
  }

  private async recordFile(uploadId: string, fileId: string): Promise<string> {
    forgetRow(uploadId);
    await this.transactions.run((tx) => tx.getRepository(ResumableUploadEntity).update({ id: uploadId }, { fileId }));
    return fileId;
  }
}
