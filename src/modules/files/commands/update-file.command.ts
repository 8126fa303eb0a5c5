import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { EntityManager } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { UrlSigner } from '../../../infra/storage/url-signer.js';
import { findFolderToFill } from '../../folders/folder-tree-lock.js';
import { FileResponse } from '../dto/file.response.js';
import { FileEntity } from '../file.entity.js';
import { acceptedName, nameKeyOf } from '../file-naming.js';
import { freeFileName, retryOnNameCollision } from '../name-collisions.js';
import { sharedFileIds } from '../../shares/live-shares.js';

export class UpdateFileCommand extends Command<FileResponse> {
  /** `folderId`: undefined leaves the file where it is, null moves it to the root. */
  constructor(
    readonly actor: Actor,
    readonly fileId: string,
    readonly name: string | undefined,
    readonly folderId: string | null | undefined,
  ) {
    super();
  }
}

/** Renames and/or moves a file; a name taken in the target folder gets a numbered suffix. A PATCH that changes nothing writes nothing. */
@CommandHandler(UpdateFileCommand)
export class UpdateFileHandler implements ICommandHandler<UpdateFileCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly signer: UrlSigner,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, fileId, name: requestedName, folderId }: UpdateFileCommand): Promise<FileResponse> {
    const name = requestedName === undefined ? undefined : acceptedName(requestedName);
    const now = this.clock.now();
    return retryOnNameCollision(() =>
      this.transactions.run(async (tx) => {
        const files = tx.getRepository(FileEntity);
        const file = await files.findOneBy({ id: fileId, accountId: actor.accountId, state: 'active' });
        if (!file || file.scanStatus === 'infected') throw new NotFound('file', fileId);
        // Leaving a folder holds it too: a deletion of it then waits for the move, and does not trash the file that left.
        if (folderId !== undefined && folderId !== file.folderId && file.folderId !== null) await findFolderToFill(tx, actor.accountId, file.folderId);
        if (folderId) {
          const folder = await findFolderToFill(tx, actor.accountId, folderId);
          if (!folder) throw new NotFound('folder', folderId);
        }
        const targetFolderId = folderId === undefined ? file.folderId : folderId;
        const targetKey = targetFolderId ?? '';
        const wanted = name ?? file.name;
        // Nothing to change: modified_at (the downloads' Last-Modified) and the listings' order stay as they were.
        if (wanted === file.name && targetFolderId === file.folderId) return this.answer(tx, file, now);
        const finalName = await freeFileName(tx, actor.accountId, targetKey, wanted, file.id);
        Object.assign(file, { name: finalName, nameKey: nameKeyOf(finalName), folderId: targetFolderId, folderKey: targetKey, modifiedAt: now });
        // Only while still active: a deletion that committed after our read leaves the trashed file as it deleted it.
        const changed = await files.update({ id: file.id, state: 'active' }, { name: file.name, nameKey: file.nameKey, folderId: file.folderId, folderKey: file.folderKey, modifiedAt: now });
        if (!changed.affected) throw new NotFound('file', fileId);
        return this.answer(tx, file, now);
      }),
    );
  }

  private async answer(tx: EntityManager, file: FileEntity, now: Date): Promise<FileResponse> {
    const shared = await sharedFileIds(tx, [file.id], now);
    return FileResponse.from(file, this.signer, now, { isShared: shared.has(file.id) });
  }
}
