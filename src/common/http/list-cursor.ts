import { createHmac } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import type { KeysetPosition } from '../../infra/database/keyset.js';
import { InvalidRequest } from '../errors/api-error.js';
import { CursorPagination, Page } from './envelope.js';
import type { CursorPageRequest } from './pagination.request.js';
import { matchesBase64urlMac } from '../mac.js';

/**
 * What a cursor is bound to: the listing, the account, and every parameter that decides which items
 * match and in which order (filters, search, sort, parent). `per_page` is not part of it.
 */
export interface CursorScope {
  list: 'files' | 'folders' | 'trash' | 'shares' | 'deliveries';
  accountId: string;
  query: Record<string, string | number | null | undefined>;
}

/** Where one page of a listing starts and how many rows to read for it. */
export interface ListWindow {
  readonly perPage: number;
  /** The page number answered: the one asked for, or with a cursor the one its position falls on. */
  readonly page: number;
  /** Rows to skip (page numbers); 0 with a cursor. */
  readonly offset: number;
  /** With a cursor: list only rows after this position. */
  readonly after: KeysetPosition | null;
  /** One row more than a page: whether it comes back says whether there is a next page. */
  readonly limit: number;
  /** Items before this page in the walk (the offset, or what the cursor counted). */
  readonly walked: number;
}

const VERSION = 1;
const MAC_BYTES = 16;

/**
 * Keyset cursors: `base64url(JSON [version, sort key, id, items walked]) . base64url(MAC)`. The MAC is an
 * HMAC-SHA256 (a key derived from URL_SIGNING_SECRET) over the scope and the payload, so a cursor that
 * was altered, or made for another account, listing, filter or sort, is refused with 400, and nothing in
 * it is trusted before the MAC matches. The position itself is readable: it holds only what the page's
 * last item already showed.
 */
@Injectable()
export class ListCursors {
  private readonly key: Buffer;

  constructor(config: AppConfig) {
    // A key of its own, so a cursor MAC can never stand in for a signed link's signature or the reverse.
    this.key = createHmac('sha256', config.urlSigningSecret).update('list-cursor').digest();
  }

  /** The window of one request: its page number, or the position its cursor continues from. */
  open(request: CursorPageRequest, scope: CursorScope): ListWindow {
    const perPage = request.per_page;
    if (request.cursor === undefined) {
      const offset = request.offset;
      return { perPage, page: request.pageNumber, offset, after: null, limit: perPage + 1, walked: offset };
    }
    const { after, walked } = this.decode(request.cursor, scope);
    return { perPage, page: Math.floor(walked / perPage) + 1, offset: 0, after, limit: perPage + 1, walked };
  }

  /**
   * The answer for the rows a window read (up to `limit`, in order): the page's items, the pagination
   * object, and `next_cursor` after the last item when another row followed it.
   */
  page<Row, Item>(window: ListWindow, scope: CursorScope, rows: Row[], totalItems: number, position: (row: Row) => KeysetPosition, item: (row: Row) => Item): Page<Item> {
    const more = rows.length > window.perPage;
    const shown = more ? rows.slice(0, window.perPage) : rows;
    const next = more ? this.encode(position(shown[shown.length - 1]), window.walked + shown.length, scope) : null;
    return new Page(shown.map(item), CursorPagination.after(window.page, window.perPage, totalItems, next));
  }

  encode(position: KeysetPosition, walked: number, scope: CursorScope): string {
    const payload = Buffer.from(JSON.stringify([VERSION, position[0], position[1], walked])).toString('base64url');
    return `${payload}.${this.mac(payload, scope).toString('base64url')}`;
  }

  decode(cursor: string, scope: CursorScope): { after: KeysetPosition; walked: number } {
    const parts = cursor.split('.');
    const [payload, mac] = parts;
    if (parts.length !== 2 || !payload || !matchesBase64urlMac(mac!, this.mac(payload, scope))) throw foreignCursor();
    const parsed: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed[0] !== VERSION) throw foreignCursor();
    const [, key, id, walked] = parsed as [number, unknown, unknown, unknown];
    if ((typeof key !== 'string' && typeof key !== 'number') || typeof id !== 'string' || !Number.isSafeInteger(walked) || (walked as number) < 0) {
      throw foreignCursor();
    }
    return { after: [key, id], walked: walked as number };
  }

  private mac(payload: string, scope: CursorScope): Buffer {
    const query = Object.keys(scope.query)
      .sort()
      .map((name) => [name, scope.query[name] === undefined || scope.query[name] === '' ? null : scope.query[name]]);
    return createHmac('sha256', this.key)
      .update(JSON.stringify([scope.list, scope.accountId, query]))
      .update('\n')
      .update(payload)
      .digest()
      .subarray(0, MAC_BYTES);
  }
}

function foreignCursor(): InvalidRequest {
  return InvalidRequest.fields([
    { field: 'cursor', message: 'is not a cursor of this listing: it was altered, or made for other filters, search, sort or account' },
  ]);
}
