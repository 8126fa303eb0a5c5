import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { Page, Pagination } from '../../../common/http/envelope.js';
import { type SqlDialect, sqlDialect, type SqlParameters } from '../../../infra/database/sql-dialect.js';
import { UrlSigner } from '../../../infra/storage/url-signer.js';
import { FolderEntity } from '../../folders/folder.entity.js';
import { FileResponse, type FileRow } from '../dto/file.response.js';
import type { ListFilesRequest } from '../dto/file.requests.js';
import { FileEntity } from '../file.entity.js';
import { escapeLike, nameKeyOf } from '../file-naming.js';
import { liveShareExistsSql } from '../../shares/live-shares.js';
import { ListingTotals } from './listing-totals.js';

const SORT_COLUMNS = { created: 'f.created_at', modified: 'f.modified_at', name: 'f.name_key', size: 'f.size' } as const;
const FILE_COLUMNS = 'f.id, f.name, f.size, f.mime_type, f.category, f.folder_id, f.created_at, f.modified_at, f.thumbnail_key, f.md5, f.scan_status';

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
 * The hottest route, so plain SQL straight into the response (no query builder, no entities), and
 * the total is counted only when the account's files changed (ListingTotals).
 */
@QueryHandler(ListFilesQuery)
export class ListFilesHandler implements IQueryHandler<ListFilesQuery> {
  private readonly dialect: SqlDialect;

  constructor(
    @InjectRepository(FileEntity) private readonly files: Repository<FileEntity>,
    @InjectRepository(FolderEntity) private readonly folders: Repository<FolderEntity>,
    private readonly totals: ListingTotals,
    private readonly signer: UrlSigner,
    private readonly clock: Clock,
  ) {
    this.dialect = sqlDialect(files.manager);
  }

  async execute({ actor, request }: ListFilesQuery): Promise<Page<FileResponse>> {
    if (request.folder_id !== undefined) {
      const folder = await this.folders.findOneBy({ id: request.folder_id, accountId: actor.accountId, state: 'active' });
      if (!folder) throw new NotFound('folder', request.folder_id);
    }
    const now = this.clock.now();
    const folderKey = request.folder_id ?? '';
    const searchKey = request.search ? nameKeyOf(request.search) : '';
    const filter = (params: SqlParameters) =>
      `f.account_id = ${params.add(actor.accountId)} AND f.state = 'active' AND f.folder_key = ${params.add(folderKey)}` +
      // Quarantined files leave listings (docs/files.md, "Decisions where the specification is silent").
      " AND f.scan_status <> 'infected'" +
      (request.type ? ` AND f.category = ${params.add(request.type)}` : '') +
      (searchKey ? ` AND f.name_key LIKE ${params.add(`%${escapeLike(searchKey)}%`)} ESCAPE '\\'` : '');

    const total = await this.totals.total(actor.accountId, `${folderKey}\u0000${request.type ?? ''}\u0000${searchKey}`, async () => {
      // COUNT(*) rather than COUNT(DISTINCT id): served from idx_files_folder_count alone.
      const params = this.dialect.parameters();
      const rows: { count: string | number }[] = await this.files.query(`SELECT COUNT(*) AS count FROM files f WHERE ${filter(params)}`, params.values);
      return Number(rows[0]?.count ?? 0);
    });

    const [key, direction] = request.sort.split('_') as [keyof typeof SORT_COLUMNS, 'asc' | 'desc'];
    const order = direction === 'asc' ? 'ASC' : 'DESC';
    const params = this.dialect.parameters();
    const nowParameter = params.add(now.toISOString());
    // The page first, then is_shared for its rows only (never for the rows an OFFSET skips).
    const page =
      `SELECT ${FILE_COLUMNS}, ${SORT_COLUMNS[key]} AS sort_key FROM files f WHERE ${filter(params)} ` +
      `ORDER BY ${SORT_COLUMNS[key]} ${order}, f.id ${order} LIMIT ${params.add(request.per_page)} OFFSET ${params.add(request.offset)}`;
    const sql =
      `SELECT f.*, CASE WHEN ${liveShareExistsSql('f.id', nowParameter)} THEN 1 ELSE 0 END AS is_shared ` +
      `FROM (${page}) f ORDER BY f.sort_key ${order}, f.id ${order}`;
    const rows: (FileRow & { is_shared: number | string })[] = await this.files.query(sql, params.values);
    return new Page(
      rows.map((row) => FileResponse.fromRow(row, this.signer, now, { isShared: Number(row.is_shared) === 1 })),
      Pagination.of(request.page, request.per_page, total),
    );
  }
}
