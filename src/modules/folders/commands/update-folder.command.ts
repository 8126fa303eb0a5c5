import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { ApiError, InvalidRequest, NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { acceptedName, nameKeyOf } from '../../files/file-naming.js';
import { retryOnNameCollision } from '../../files/name-collisions.js';
import { activeAncestry } from '../folder-ancestry.js';
import { freeFolderName } from '../folder-naming.js';
import { FolderResponse } from '../dto/folder.dto.js';
import { FolderEntity } from '../folder.entity.js';
import { lockFolderTree } from '../folder-tree-lock.js';

/** The answer of an attempt whose folder another request changed after it was read: the next attempt reads it again. */
const CHANGED_MEANWHILE = Symbol('changed meanwhile');
/** Attempts before giving up with 409, as retryOnNameCollision does for names. */
const ATTEMPTS = 8;

export class UpdateFolderCommand extends Command<FolderResponse> {
  /** `parentId`: undefined leaves the folder where it is, null moves it to the root. */
  constructor(
    readonly actor: Actor,
    readonly folderId: string,
    readonly name: string | undefined,
    readonly parentId: string | null | undefined,
  ) {
    super();
  }
}

/** Renames and/or moves a folder; it can never move into itself or one of its descendants. A PATCH that changes nothing writes nothing. */
@CommandHandler(UpdateFolderCommand)
export class UpdateFolderHandler implements ICommandHandler<UpdateFolderCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, folderId, name: requestedName, parentId }: UpdateFolderCommand): Promise<FolderResponse> {
    const name = requestedName === undefined ? undefined : acceptedName(requestedName);
    for (let attempt = 1; ; attempt++) {
      const updated = await this.attempt(actor, folderId, name, parentId);
      if (updated !== CHANGED_MEANWHILE) return updated;
      if (attempt >= ATTEMPTS) throw new ApiError(409, 'conflict', 'The folder kept changing while this request ran; retry it.');
    }
  }

  /** One try on the folder as it is now: CHANGED_MEANWHILE when another change to it committed after it was read. */
  private attempt(actor: Actor, folderId: string, name: string | undefined, parentId: string | null | undefined): Promise<FolderResponse | typeof CHANGED_MEANWHILE> {
    return retryOnNameCollision(() =>
      this.transactions.run(async (tx) => {
        if (parentId !== undefined) await lockFolderTree(tx, actor.accountId);
        const folders = tx.getRepository(FolderEntity);
        const folder = await folders.findOneBy({ id: folderId, accountId: actor.accountId, state: 'active' });
        if (!folder) throw new NotFound('folder', folderId);
        if (parentId) {
          // Walk up from the new parent: meeting the folder itself means a cycle. A ring of other folders (which
          // moves made before folder-tree-lock.ts could leave behind) ends the walk when it comes round.
          const ancestry = await activeAncestry(tx, actor.accountId, parentId);
          const passed = new Set<string>();
          for (let cursor: string | null = parentId; cursor !== null && !passed.has(cursor); ) {
            if (cursor === folder.id) throw InvalidRequest.fields([{ field: 'parent_id', message: 'a folder cannot move into itself or one of its descendants' }]);
            if (!ancestry.has(cursor)) throw new NotFound('folder', cursor);
            passed.add(cursor);
            cursor = ancestry.get(cursor)!;
          }
        }
        const targetParent = parentId === undefined ? folder.parentId : parentId;
        // Nothing to change: modified_at and the listings' order stay as they were.
        if ((name ?? folder.name) === folder.name && targetParent === folder.parentId) return FolderResponse.from(folder);
        const finalName = await freeFolderName(tx, actor.accountId, targetParent ?? '', name ?? folder.name, folder.id);
        const now = this.clock.now();
        const asRead = { name: folder.name, parentKey: folder.parentKey };
        Object.assign(folder, { name: finalName, nameKey: nameKeyOf(finalName), parentId: targetParent, parentKey: targetParent ?? '', modifiedAt: now });
        // Only as read, and still active: a rename that read the folder before a move committed would otherwise put it
        // back where it was (the move undone, or a cycle closed), and a move would undo a rename. A deletion that
        // committed after our read leaves the trashed folder as it deleted it.
        const changed = await folders.update(
          { id: folder.id, state: 'active', ...asRead },
          { name: folder.name, nameKey: folder.nameKey, parentId: folder.parentId, parentKey: folder.parentKey, modifiedAt: now },
        );
        if (changed.affected) return FolderResponse.from(folder);
        if (await folders.existsBy({ id: folder.id, state: 'active' })) return CHANGED_MEANWHILE;
        throw new NotFound('folder', folderId);
      }),
    );
  }
}
