import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { NotFound } from '../../../common/errors/api-error.js';
import type { Page } from '../../../common/http/envelope.js';
import { type CursorScope, ListCursors } from '../../../common/http/list-cursor.js';
import { keysetAfterParameters, keysetOrderBy, type KeysetOrder } from '../../../infra/database/keyset.js';
import { type SqlDialect, sqlDialect, type SqlParameters } from '../../../infra/database/sql-dialect.js';
import { nameSearchPlan } from '../../files/name-search.js';
import { FolderResponse, type ListFoldersRequest } from '../dto/folder.dto.js';
import { FolderEntity } from '../folder.entity.js';

const SORT_COLUMNS = { created: 'f.created_at', modified: 'f.modified_at', name: 'f.name_key' } as const;
/** The entity value behind each sort column, as the database holds it (timestamps as ISO text). */
const SORT_VALUES = {
  created: (folder: FolderEntity) => folder.createdAt.toISOString(),
  modified: (folder: FolderEntity) => folder.modifiedAt.toISOString(),
  name: (folder: FolderEntity) => folder.nameKey,
} as const;

export class ListFoldersQuery extends Query<Page<FolderResponse>> {
  constructor(
    readonly actor: Actor,
    readonly request: ListFoldersRequest,
  ) {
    super();
  }
}

/**
 * One folder's active subfolders (the root's when parent_id is omitted), one page, ties broken by id.
 * The search uses the folders' name index (nameSearchPlan); the page's ids are found first, its rows after.
 */
@QueryHandler(ListFoldersQuery)
export class ListFoldersHandler implements IQueryHandler<ListFoldersQuery> {
  private readonly dialect: SqlDialect;

  constructor(
    @InjectRepository(FolderEntity) private readonly folders: Repository<FolderEntity>,
    private readonly cursors: ListCursors,
  ) {
    this.dialect = sqlDialect(folders.manager);
  }

  async execute({ actor, request }: ListFoldersQuery): Promise<Page<FolderResponse>> {
    if (request.parent_id !== undefined) {
      const parent = await this.folders.findOneBy({ id: request.parent_id, accountId: actor.accountId, state: 'active' });
      if (!parent) throw new NotFound('folder', request.parent_id);
    }
    const scope: CursorScope = { list: 'folders', accountId: actor.accountId, query: { parent_id: request.parent_id, sort: request.sort, search: request.search } };
    const window = this.cursors.open(request, scope);
    const [key, direction] = request.sort.split('_') as [keyof typeof SORT_COLUMNS, 'asc' | 'desc'];
    const order: KeysetOrder = { column: SORT_COLUMNS[key], id: 'f.id', descending: direction === 'desc' };
    const search = await nameSearchPlan(this.folders.manager, this.dialect, 'folders', 'f', request.search);
    const filter = (params: SqlParameters) =>
      `${search.condition(params)}f.account_id = ${params.add(actor.accountId)} AND f.state = 'active' AND f.parent_key = ${params.add(request.parent_id ?? '')}`;
    const countParams = this.dialect.parameters();
    const counted: { count: string | number }[] = await this.folders.query(`SELECT COUNT(*) AS count FROM ${search.from} WHERE ${filter(countParams)}`, countParams.values);
    const total = Number(counted[0]?.count ?? 0);
    const params = this.dialect.parameters();
    // Placeholders are numbered in the order they are added, which must be the order they appear in.
    const where = filter(params) + (window.after ? ` AND ${keysetAfterParameters(order, params, window.after)}` : '');
    const ids: { id: string }[] = await this.folders.query(
      `SELECT f.id FROM ${search.from} WHERE ${where} ORDER BY ${keysetOrderBy(order)} LIMIT ${params.add(window.limit)} OFFSET ${params.add(window.offset)}`,
      params.values,
    );
    const byId = new Map((ids.length ? await this.folders.findBy({ id: In(ids.map((row) => row.id)) }) : []).map((folder) => [folder.id, folder]));
    // A folder deleted between the two reads leaves the page one shorter, as if listed a moment later.
    const folders = ids.map((row) => byId.get(row.id)).filter((folder) => folder !== undefined && folder.state === 'active') as FolderEntity[];
    return this.cursors.page(window, scope, folders, total, (folder) => [SORT_VALUES[key](folder), folder.id], FolderResponse.from);
  }
}
