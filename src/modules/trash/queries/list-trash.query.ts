import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Page, Pagination } from '../../../common/http/envelope.js';
import { FileEntity } from '../../files/file.entity.js';
import { escapeLike, nameKeyOf } from '../../files/file-naming.js';
import { type ListTrashRequest, TrashedFileResponse } from '../dto/trash.dto.js';

export class ListTrashQuery extends Query<Page<TrashedFileResponse>> {
  constructor(
    readonly actor: Actor,
    readonly request: ListTrashRequest,
  ) {
    super();
  }
}

/** The account's trashed files, newest deletion first by default, ties broken by id. */
@QueryHandler(ListTrashQuery)
export class ListTrashHandler implements IQueryHandler<ListTrashQuery> {
  constructor(@InjectRepository(FileEntity) private readonly files: Repository<FileEntity>) {}

  async execute({ actor, request }: ListTrashQuery): Promise<Page<TrashedFileResponse>> {
    const order = request.sort === 'deleted_asc' ? 'ASC' : 'DESC';
    const query = this.files.createQueryBuilder('f').where('f.account_id = :accountId AND f.state = :state', { accountId: actor.accountId, state: 'trashed' });
    if (request.search) query.andWhere("f.name_key LIKE :search ESCAPE '\\'", { search: `%${escapeLike(nameKeyOf(request.search))}%` });
    const total = await query.getCount();
    const files = await query.orderBy('f.deleted_at', order).addOrderBy('f.id', order).offset(request.offset).limit(request.per_page).getMany();
    return new Page(files.map(TrashedFileResponse.from), Pagination.of(request.page, request.per_page, total));
  }
}
