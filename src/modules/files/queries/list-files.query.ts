import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { Page, Pagination } from '../../../common/http/envelope.js';
import { UrlSigner } from '../../../infra/storage/url-signer.js';
import { FolderEntity } from '../../folders/folder.entity.js';
import { FileResponse } from '../dto/file.response.js';
import type { ListFilesRequest } from '../dto/file.requests.js';
import { FileEntity } from '../file.entity.js';
import { escapeLike, nameKeyOf } from '../file-naming.js';
import { sharedFileIds } from '../shared-files.js';

const SORT_COLUMNS = { created: 'f.created_at', modified: 'f.modified_at', name: 'f.name_key', size: 'f.size' } as const;

export class ListFilesQuery extends Query<Page<FileResponse>> {
  constructor(
    readonly actor: Actor,
    readonly request: ListFilesRequest,
  ) {
    super();
  }
}

/**
 * One folder's active files, one page. Every sort ends with the id in the same direction, so a
 * page boundary never repeats or skips a file; the (account, state, folder, key, id) indexes serve it.
 */
@QueryHandler(ListFilesQuery)
export class ListFilesHandler implements IQueryHandler<ListFilesQuery> {
  constructor(
    @InjectRepository(FileEntity) private readonly files: Repository<FileEntity>,
    @InjectRepository(FolderEntity) private readonly folders: Repository<FolderEntity>,
    private readonly signer: UrlSigner,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, request }: ListFilesQuery): Promise<Page<FileResponse>> {
    if (request.folder_id !== undefined) {
      const folder = await this.folders.findOneBy({ id: request.folder_id, accountId: actor.accountId, state: 'active' });
      if (!folder) throw new NotFound('folder', request.folder_id);
    }
    const [key, direction] = request.sort.split('_') as [keyof typeof SORT_COLUMNS, 'asc' | 'desc'];
    const order = direction === 'asc' ? 'ASC' : 'DESC';
    const query = this.files
      .createQueryBuilder('f')
      .where('f.account_id = :accountId AND f.state = :state AND f.folder_key = :folderKey', {
        accountId: actor.accountId,
        state: 'active',
        folderKey: request.folder_id ?? '',
      })
      // Quarantined files leave listings (decisions.md "Files").
      .andWhere("f.scan_status <> 'infected'");
    if (request.type) query.andWhere('f.category = :category', { category: request.type });
    if (request.search) query.andWhere("f.name_key LIKE :search ESCAPE '\\'", { search: `%${escapeLike(nameKeyOf(request.search))}%` });
    const total = await query.getCount();
    const files = await query
      .orderBy(SORT_COLUMNS[key], order)
      .addOrderBy('f.id', order)
      .offset(request.offset)
      .limit(request.per_page)
      .getMany();
    const now = this.clock.now();
    const shared = await sharedFileIds(this.files.manager, files.map((f) => f.id), now);
    return new Page(
      files.map((file) => FileResponse.from(file, this.signer, now, { isShared: shared.has(file.id) })),
      Pagination.of(request.page, request.per_page, total),
    );
  }
}
