import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { Page, Pagination } from '../../../common/http/envelope.js';
import { escapeLike, nameKeyOf } from '../../files/file-naming.js';
import { FolderResponse, type ListFoldersRequest } from '../dto/folder.dto.js';
import { FolderEntity } from '../folder.entity.js';

const SORT_COLUMNS = { created: 'f.created_at', modified: 'f.modified_at', name: 'f.name_key' } as const;

export class ListFoldersQuery extends Query<Page<FolderResponse>> {
  constructor(
    readonly actor: Actor,
    readonly request: ListFoldersRequest,
  ) {
    super();
  }
}

/** One folder's active subfolders (the root's when parent_id is omitted), one page, ties broken by id. */
@QueryHandler(ListFoldersQuery)
export class ListFoldersHandler implements IQueryHandler<ListFoldersQuery> {
  constructor(@InjectRepository(FolderEntity) private readonly folders: Repository<FolderEntity>) {}

  async execute({ actor, request }: ListFoldersQuery): Promise<Page<FolderResponse>> {
    if (request.parent_id !== undefined) {
      const parent = await this.folders.findOneBy({ id: request.parent_id, accountId: actor.accountId, state: 'active' });
      if (!parent) throw new NotFound('folder', request.parent_id);
    }
    const [key, direction] = request.sort.split('_') as [keyof typeof SORT_COLUMNS, 'asc' | 'desc'];
    const order = direction === 'asc' ? 'ASC' : 'DESC';
    const query = this.folders
      .createQueryBuilder('f')
      .where('f.account_id = :accountId AND f.state = :state AND f.parent_key = :parentKey', {
        accountId: actor.accountId,
        state: 'active',
        parentKey: request.parent_id ?? '',
      });
    if (request.search) query.andWhere("f.name_key LIKE :search ESCAPE '\\'", { search: `%${escapeLike(nameKeyOf(request.search))}%` });
    const total = await query.getCount();
    const folders = await query.orderBy(SORT_COLUMNS[key], order).addOrderBy('f.id', order).offset(request.offset).limit(request.per_page).getMany();
    return new Page(folders.map(FolderResponse.from), Pagination.of(request.page, request.per_page, total));
  }
}
