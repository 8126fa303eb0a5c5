import type { CallOptions, HttpClient } from './http.js';
import type { CursorPage, Page } from './types.js';

/** One page of a listing route. */
export function fetchPage<T>(http: HttpClient, path: string, query: object | undefined, options: CallOptions = {}): Promise<Page<T>> {
  return http.envelope<Page<T>>({ method: 'GET', path, query, signal: options.signal });
}

/** One page of a listing that also pages by cursor (its pagination carries `next_cursor`). */
export function fetchCursorPage<T>(http: HttpClient, path: string, query: object | undefined, options: CallOptions = {}): Promise<CursorPage<T>> {
  return http.envelope<CursorPage<T>>({ method: 'GET', path, query, signal: options.signal });
}

/** Every item of a listing, page after page, from the page in `query` (default 1) to the last. */
export async function* paginate<T>(http: HttpClient, path: string, query: { page?: number } = {}, options: CallOptions = {}): AsyncGenerator<T> {
  for (let page = query.page ?? 1; ; page++) {
    const { data, pagination } = await fetchPage<T>(http, path, { ...query, page }, options);
    yield* data;
    if (data.length === 0 || page >= pagination.total_pages) return;
  }
}

/**
 * Every item of a listing that pages by cursor: the first page (the one `query` names: its `page`, its `cursor`,
 * or page 1), then `next_cursor` after `next_cursor` until it is null. Unlike page numbers, this never repeats or
 * skips an item while others add and delete items, and a deep page costs the server what the first does.
 */
export async function* paginateByCursor<T>(
  http: HttpClient,
  path: string,
  query: { page?: number; cursor?: string } = {},
  options: CallOptions = {},
): AsyncGenerator<T> {
  // The server refuses `page` together with `cursor`: the page number only starts the walk.
  const { page, cursor, ...filters } = query;
  let next: string | null | undefined = cursor;
  let first = true;
  do {
    const pageQuery: object = first && next === undefined ? { ...filters, ...(page === undefined ? {} : { page }) } : { ...filters, cursor: next };
    const { data, pagination }: CursorPage<T> = await fetchCursorPage<T>(http, path, pageQuery, options);
    yield* data;
    next = pagination.next_cursor;
    first = false;
  } while (next);
}
