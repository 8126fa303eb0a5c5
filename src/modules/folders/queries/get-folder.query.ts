import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { FolderResponse } from '../dto/folder.dto.js';
import { FolderEntity } from '../folder.entity.js';

export class GetFolderQuery extends Query<FolderResponse> {
  constructor(
    readonly actor: Actor,
    readonly folderId: string,
  ) {
    super();
  }
}

/** One active folder of the caller's account (a client walks `parent_id` up from it to show a path); trashed and other accounts' folders are not found. */
@QueryHandler(GetFolderQuery)
export class GetFolderHandler implements IQueryHandler<GetFolderQuery> {
  constructor(@InjectRepository(FolderEntity) private readonly folders: Repository<FolderEntity>) {}

  async execute({ actor, folderId }: GetFolderQuery): Promise<FolderResponse> {
    const folder = await this.folders.findOneBy({ id: folderId, accountId: actor.accountId, state: 'active' });
    if (!folder) throw new NotFound('folder', folderId);
    return FolderResponse.from(folder);
  }
}
