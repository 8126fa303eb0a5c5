import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import type { Page } from '../../../common/http/envelope.js';
import { type CursorScope, ListCursors } from '../../../common/http/list-cursor.js';
import { keysetAfterParameters, keysetOrderBy, type KeysetOrder } from '../../../infra/database/keyset.js';
import { type SqlDialect, sqlDialect, type SqlParameters } from '../../../infra/database/sql-dialect.js';
import { UrlSigner } from '../../../infra/storage/url-signer.js';
import { FolderEntity } from '../../folders/folder.entity.js';
import { FileResponse, type FileRow } from '../dto/file.response.js';
import type { ListFilesRequest } from '../dto/file.requests.js';
import { FileEntity } from '../file.entity.js';
import { nameKeyOf } from '../file-naming.js';
import { nameSearchPlan } from '../name-search.js';
import { liveShareExistsSql } from '../../shares/live-shares.js';
import { listingVersionExpression, ListingTotals, type ListingVersion } from './listing-totals.js';
import { type Anchor, ANCHOR_STRIDE, PageAnchors, type PageStart } from './page-anchors.js';

const SORT_COLUMNS = { created: 'f.created_at', modified: 'f.modified_at', name: 'f.name_key', size: 'f.size' } as const;
/**
 * Where a row's sort key is found: its own column, or for names the name key, selected as `sort_key`. Every
 * column more costs allocation on every row of every page (better-sqlite3 grows each row's properties).
 */
const SORT_KEY_FIELDS = { created: 'created_at', modified: 'modified_at', name: 'sort_key', size: 'size' } as const;
const FILE_COLUMNS = 'f.id, f.name, f.size, f.mime_type, f.category, f.folder_id, f.created_at, f.modified_at, f.thumbnail_key, f.md5, f.scan_status';

export class ListFilesQuery extends Query<Page<FileResponse>> {
  constructor(
    readonly actor: Actor,
    readonly request: ListFilesRequest,
  ) {
    super();
  }
}

/** Rows strictly after `after` in `order` (the keyset condition): an index seek, since the listing indexes end with (column, id). */
const afterAnchor = (order: KeysetOrder, after: Anchor | null, params: SqlParameters) =>
  after ? ` AND ${keysetAfterParameters(order, params, [after.key, after.id])}` : '';

/**
 * The ids of one page of a listing by page number (page numbers stay fast at any depth):
 *  - the listing indexes carry every column a listing filters on (migration 1764340000000), so the rows
 *    an OFFSET skips are index entries, never table rows, and the caller reads the page's own rows by id
 *    after (a deferred join);
 *  - the page starts at the nearest remembered row before it (PageAnchors), so the OFFSET skips fewer
 *    than ANCHOR_STRIDE entries however deep the page.
 */
function pageOfIds(from: string, filter: string, order: KeysetOrder, start: PageStart, limit: number, params: SqlParameters): string {
  return (
    `SELECT f.id FROM ${from} WHERE ${filter}${afterAnchor(order, start.after, params)} ` +
    `ORDER BY ${keysetOrderBy(order)} LIMIT ${params.add(limit)} OFFSET ${params.add(start.offset)}`
  );
}

/** The row ANCHOR_STRIDE - 1 rows after `after` (PageAnchors). */
function nextAnchorSql(from: string, filter: string, order: KeysetOrder, after: Anchor | null, params: SqlParameters): string {
  return (
    `SELECT ${order.column} AS anchor_key, f.id FROM ${from} WHERE ${filter}${afterAnchor(order, after, params)} ` +
    `ORDER BY ${keysetOrderBy(order)} LIMIT 1 OFFSET ${ANCHOR_STRIDE - 1}`
  );
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
    private readonly anchors: PageAnchors,
    private readonly signer: UrlSigner,
    private readonly clock: Clock,
    private readonly cursors: ListCursors,
  ) {
    this.dialect = sqlDialect(files.manager);
  }

  async execute({ actor, request }: ListFilesQuery): Promise<Page<FileResponse>> {
    if (request.folder_id !== undefined) {
      const folder = await this.folders.findOneBy({ id: request.folder_id, accountId: actor.accountId, state: 'active' });
      if (!folder) throw new NotFound('folder', request.folder_id);
    }
    const scope: CursorScope = {
      list: 'files',
      accountId: actor.accountId,
      query: { folder_id: request.folder_id, sort: request.sort, type: request.type, search: request.search },
    };
    const window = this.cursors.open(request, scope);
    const now = this.clock.now();
    const folderKey = request.folder_id ?? '';
    const search = await nameSearchPlan(this.files.manager, this.dialect, 'files', 'f', request.search);
    const filter = (params: SqlParameters) =>
      search.condition(params) +
      `f.account_id = ${params.add(actor.accountId)} AND f.state = 'active' AND f.folder_key = ${params.add(folderKey)}` +
      // Quarantined files leave listings (docs/files.md, "Decisions where the specification is silent").
      " AND f.scan_status <> 'infected'" +
      (request.type ? ` AND f.category = ${params.add(request.type)}` : '');

    const searchKey = request.search ? nameKeyOf(request.search) : '';
    const [key, direction] = request.sort.split('_') as [keyof typeof SORT_COLUMNS, 'asc' | 'desc'];
    const order: KeysetOrder = { column: SORT_COLUMNS[key], id: 'f.id', descending: direction === 'desc' };
    const listing = `${folderKey}\u0000${request.type ?? ''}\u0000${searchKey}\u0000${request.sort}`;
    // A cursor says where its page starts; a page number starts from the nearest remembered row (PageAnchors).
    const start: PageStart = window.after
      ? { after: { key: window.after[0], id: window.after[1] }, offset: 0 }
      : await this.anchors.start(actor.accountId, listing, window.offset, async (after) => {
          const params = this.dialect.parameters();
          const rows: { anchor_key: string | number; id: string }[] = await this.files.query(nextAnchorSql(search.from, filter(params), order, after, params), params.values);
          return rows[0] ? { key: rows[0].anchor_key, id: rows[0].id } : null;
        });
    const params = this.dialect.parameters();
    const nowParameter = params.add(now.toISOString());
    const versionSql = listingVersionExpression(params.add(actor.accountId));
    const page = pageOfIds(search.from, filter(params), order, start, window.limit, params);
    // The page's ids first, from the index alone; then its rows, and is_shared for them only. The listing
    // version comes with them (one statement), so total_items costs nothing more while the files are unchanged.
    const sql =
      `SELECT ${FILE_COLUMNS}${key === 'name' ? `, ${order.column} AS sort_key` : ''}, CASE WHEN ${liveShareExistsSql('f.id', nowParameter)} THEN 1 ELSE 0 END AS is_shared, ` +
      `${versionSql} AS listing_version FROM (${page}) page JOIN files f ON f.id = page.id ORDER BY ${keysetOrderBy(order)}`;
    const rows: (FileRow & { sort_key?: string; is_shared: number | string; listing_version: ListingVersion })[] = await this.files.query(sql, params.values);
    const countAll = async () => {
      // COUNT(*) rather than COUNT(DISTINCT id): served from the listing indexes alone.
      const countParams = this.dialect.parameters();
      const counted: { count: string | number }[] = await this.files.query(`SELECT COUNT(*) AS count FROM ${search.from} WHERE ${filter(countParams)}`, countParams.values);
      return Number(counted[0]?.count ?? 0);
    };
    const totalFilter = `${folderKey}\u0000${request.type ?? ''}\u0000${searchKey}`;
    // An empty page carries no version: read it on its own.
    const total = rows[0]
      ? await this.totals.totalAt(rows[0].listing_version, actor.accountId, totalFilter, countAll)
      : await this.totals.total(actor.accountId, totalFilter, countAll);
    return this.cursors.page(
      window,
      scope,
      rows,
      total,
      // PostgreSQL answers BIGINT sizes as strings.
      (row) => [key === 'size' ? Number(row.size) : row[SORT_KEY_FIELDS[key]]!, row.id],
      (row) => FileResponse.fromRow(row, this.signer, now, { isShared: Number(row.is_shared) === 1 }),
    );
  }
}
