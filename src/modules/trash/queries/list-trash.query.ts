import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import type { Page } from '../../../common/http/envelope.js';
import { type CursorScope, ListCursors } from '../../../common/http/list-cursor.js';
import { keysetAfterParameters, keysetOrderBy, type KeysetOrder } from '../../../infra/database/keyset.js';
import { type SqlDialect, sqlDialect, type SqlParameters } from '../../../infra/database/sql-dialect.js';
import { FileEntity } from '../../files/file.entity.js';
import { nameSearchPlan } from '../../files/name-search.js';
import { type ListTrashRequest, TrashedFileResponse } from '../dto/trash.dto.js';
import { isRecoverable, stillRecoverableSql } from '../trash-window.js';

export class ListTrashQuery extends Query<Page<TrashedFileResponse>> {
  constructor(
    readonly actor: Actor,
    readonly request: ListTrashRequest,
  ) {
    super();
  }
}

/**
 * The account's trashed files still within their recovery window (trash-window.ts: one whose window has just
 * passed is gone, although the purge has not removed it yet), newest deletion first by default, ties broken by id. The search uses
 * the same name index as file listings (nameSearchPlan); a page's ids come from idx_files_trash alone,
 * its rows are read after (a deferred join).
 */
@QueryHandler(ListTrashQuery)
export class ListTrashHandler implements IQueryHandler<ListTrashQuery> {
  private readonly dialect: SqlDialect;

  constructor(
    @InjectRepository(FileEntity) private readonly files: Repository<FileEntity>,
    private readonly cursors: ListCursors,
    private readonly clock: Clock,
  ) {
    this.dialect = sqlDialect(files.manager);
  }

  async execute({ actor, request }: ListTrashQuery): Promise<Page<TrashedFileResponse>> {
    const scope: CursorScope = { list: 'trash', accountId: actor.accountId, query: { sort: request.sort, search: request.search } };
    const window = this.cursors.open(request, scope);
    const order: KeysetOrder = { column: 'f.deleted_at', id: 'f.id', descending: request.sort !== 'deleted_asc' };
    const search = await nameSearchPlan(this.files.manager, this.dialect, 'files', 'f', request.search);
    const now = this.clock.now();
    // Not through idx_files_purge (every account's trash): the account's range of idx_files_trash, its rows checked.
    const open = (params: SqlParameters) => stillRecoverableSql(this.dialect.notIndexed('f.recoverable_until'), params.add(now.toISOString()));
    const filter = (params: SqlParameters) => `${search.condition(params)}f.account_id = ${params.add(actor.accountId)} AND f.state = 'trashed' AND ${open(params)}`;
    const countParams = this.dialect.parameters();
    const counted: { count: string | number }[] = await this.files.query(`SELECT COUNT(*) AS count FROM ${search.from} WHERE ${filter(countParams)}`, countParams.values);
    const params = this.dialect.parameters();
    const where = filter(params) + (window.after ? ` AND ${keysetAfterParameters(order, params, window.after)}` : '');
    const ids: { id: string }[] = await this.files.query(
      `SELECT f.id FROM ${search.from} WHERE ${where} ORDER BY ${keysetOrderBy(order)} LIMIT ${params.add(window.limit)} OFFSET ${params.add(window.offset)}`,
      params.values,
    );
    const byId = new Map((ids.length ? await this.files.findBy({ id: In(ids.map((row) => row.id)) }) : []).map((file) => [file.id, file]));
    // A file purged or restored between the two reads leaves the page one shorter, as if listed a moment later.
    const files = ids.map((row) => byId.get(row.id)).filter((file) => file !== undefined && isRecoverable(file, now)) as FileEntity[];
    return this.cursors.page(window, scope, files, Number(counted[0]?.count ?? 0), (file) => [file.deletedAt!.toISOString(), file.id], TrashedFileResponse.from);
  }
}
