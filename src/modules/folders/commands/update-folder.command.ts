import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { InvalidRequest, NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { acceptedName, nameKeyOf } from '../../files/file-naming.js';
import { retryOnNameCollision } from '../../files/name-collisions.js';
import { activeAncestry } from '../folder-ancestry.js';
import { freeFolderName } from '../folder-naming.js';
import { FolderResponse } from '../dto/folder.dto.js';
import { FolderEntity } from '../folder.entity.js';
import { lockFolderTree } from '../folder-tree-lock.js';

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
        Object.assign(folder, { name: finalName, nameKey: nameKeyOf(finalName), parentId: targetParent, parentKey: targetParent ?? '', modifiedAt: now });
        // Only while still active: a deletion that committed after our read leaves the trashed folder as it deleted it.
        const changed = await folders.update({ id: folder.id, state: 'active' }, { name: folder.name, nameKey: folder.nameKey, parentId: folder.parentId, parentKey: folder.parentKey, modifiedAt: now });
        if (!changed.affected) throw new NotFound('folder', folderId);
        return FolderResponse.from(folder);
      }),
    );
  }
}
