import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { newId } from '../../../common/ids.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { Outbox } from '../../../infra/outbox/outbox.js';
import { folderCreated } from '../events/folder-events.js';
import { acceptedName, nameKeyOf } from '../../files/file-naming.js';
import { retryOnNameCollision } from '../../files/name-collisions.js';
import { freeFolderName } from '../folder-naming.js';
import { FolderResponse } from '../dto/folder.dto.js';
import { FolderEntity } from '../folder.entity.js';
import { findFolderToFill } from '../folder-tree-lock.js';

export class CreateFolderCommand extends Command<FolderResponse> {
  constructor(
    readonly actor: Actor,
    readonly name: string,
    readonly parentId: string | null,
  ) {
    super();
  }
}

/** Creates a folder (a taken sibling name gets a numbered suffix) and records folder.created. */
@CommandHandler(CreateFolderCommand)
export class CreateFolderHandler implements ICommandHandler<CreateFolderCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, name: requestedName, parentId }: CreateFolderCommand): Promise<FolderResponse> {
    const name = acceptedName(requestedName);
    return retryOnNameCollision(() =>
      this.transactions.run(async (tx) => {
        if (parentId !== null) {
          const parent = await findFolderToFill(tx, actor.accountId, parentId);
          if (!parent) throw new NotFound('folder', parentId);
        }
        const now = this.clock.now();
        const finalName = await freeFolderName(tx, actor.accountId, parentId ?? '', name);
        const folder = Object.assign(new FolderEntity(), {
          id: newId('fld'),
          accountId: actor.accountId,
          parentId,
          parentKey: parentId ?? '',
          name: finalName,
          nameKey: nameKeyOf(finalName),
          state: 'active' as const,
          createdBy: actor.userId,
          createdAt: now,
          modifiedAt: now,
          deletedAt: null,
        });
        await tx.getRepository(FolderEntity).insert(folder);
        await Outbox.record(tx, folderCreated(folder));
        return FolderResponse.from(folder);
      }),
    );
  }
}
