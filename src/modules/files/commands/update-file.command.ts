import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { EntityManager } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { ApiError, NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { UrlSigner } from '../../../infra/storage/url-signer.js';
import { findFolderToFill } from '../../folders/folder-tree-lock.js';
import { FileResponse } from '../dto/file.response.js';
import { FileEntity } from '../file.entity.js';
import { acceptedName, nameKeyOf } from '../file-naming.js';
import { freeFileName, retryOnNameCollision } from '../name-collisions.js';
import { sharedFileIds } from '../../shares/live-shares.js';

/** The answer of an attempt whose file another request changed after it was read: the next attempt reads it again. */
const CHANGED_MEANWHILE = Symbol('changed meanwhile');
/** Attempts before giving up with 409, as retryOnNameCollision does for names. */
const ATTEMPTS = 8;

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
    for (let attempt = 1; ; attempt++) {
      const updated = await this.attempt(actor, fileId, name, folderId);
      if (updated !== CHANGED_MEANWHILE) return updated;
      if (attempt >= ATTEMPTS) throw new ApiError(409, 'conflict', 'The file kept changing while this request ran; retry it.');
    }
  }

  /** One try on the file as it is now: CHANGED_MEANWHILE when another rename or move of it committed after it was read. */
  private attempt(actor: Actor, fileId: string, name: string | undefined, folderId: string | null | undefined): Promise<FileResponse | typeof CHANGED_MEANWHILE> {
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
        const asRead = { name: file.name, folderKey: file.folderKey };
        Object.assign(file, { name: finalName, nameKey: nameKeyOf(finalName), folderId: targetFolderId, folderKey: targetKey, modifiedAt: now });
        // Only as read, and still active: a rename that read the file before a move committed would otherwise put it
        // back in its old folder, and a move would undo a rename. A deletion that committed after our read leaves the
        // trashed file as it deleted it.
        const changed = await files.update(
          { id: file.id, state: 'active', ...asRead },
          { name: file.name, nameKey: file.nameKey, folderId: file.folderId, folderKey: file.folderKey, modifiedAt: now },
        );
        if (changed.affected) return this.answer(tx, file, now);
        if (await files.existsBy({ id: file.id, state: 'active' })) return CHANGED_MEANWHILE;
        throw new NotFound('file', fileId);
      }),
    );
  }

  private async answer(tx: EntityManager, file: FileEntity, now: Date): Promise<FileResponse> {
    const shared = await sharedFileIds(tx, [file.id], now);
    return FileResponse.from(file, this.signer, now, { isShared: shared.has(file.id) });
  }
}
