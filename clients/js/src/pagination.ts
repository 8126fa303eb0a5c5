import type { CallOptions, HttpClient } from './http.js';
import type { Page } from './types.js';

/** One page of a listing route. */
export function fetchPage<T>(http: HttpClient, path: string, query: object | undefined, options: CallOptions = {}): Promise<Page<T>> {
  return http.envelope<Page<T>>({ method: 'GET', path, query, signal: options.signal });
}

/** Every item of a listing, page after page, from the page in `query` (default 1) to the last. */
export async function* paginate<T>(http: HttpClient, path: string, query: { page?: number } = {}, options: CallOptions = {}): AsyncGenerator<T> {
  for (let page = query.page ?? 1; ; page++) {
    const { data, pagination } = await fetchPage<T>(http, path, { ...query, page }, options);
    yield* data;
    if (data.length === 0 || page >= pagination.total_pages) return;
  }
}
