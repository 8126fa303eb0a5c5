import type { EntityManager } from 'typeorm';
import type { SqlDialect, SqlParameters } from '../../infra/database/sql-dialect.js';
import { escapeLike, nameKeyOf } from './file-naming.js';

/** Trigrams need three characters: shorter searches are answered from the listing's own index. */
const TRIGRAM_LENGTH = 3;

/**
 * Above this many names containing the search in the whole table, the trigram index would hand over
 * more candidates than walking the listing's own index in its sort order until the page is full.
 */
const INDEX_DRIVEN_LIMIT = 1_000;

/**
 * How long a probe's answer is reused. Both ways answer exactly the same rows, so a stale answer only
 * costs time; a search repeated while paging or typing is probed once.
 */
const PROBE_MEMORY_MS = 30_000;
const PROBES_REMEMBERED = 1_000;
const commonSearches = new Map<string, { common: boolean; at: number }>();

async function isCommon(manager: Pick<EntityManager, 'query'>, table: string, probe: string, phrase: string): Promise<boolean> {
  const key = `${table}\u0000${phrase}`;
  const known = commonSearches.get(key);
  const now = Date.now();
  if (known && now - known.at < PROBE_MEMORY_MS) return known.common;
  const rows: { count: number | string }[] = await manager.query(probe, [phrase]);
  const common = Number(rows[0]?.count ?? 0) >= INDEX_DRIVEN_LIMIT;
  commonSearches.delete(key);
  commonSearches.set(key, { common, at: now });
  if (commonSearches.size > PROBES_REMEMBERED) commonSearches.delete(commonSearches.keys().next().value!);
  return common;
}

/** Where a listing reads its rows from, and the search's condition (first of the WHERE clause). */
export interface NameSearchPlan {
  /** The FROM item: the table as the listing's alias, or the trigram index joined to it. */
  readonly from: string;
  /** `<condition> AND ` for the search, or '' without one; adds its parameters to `params`. */
  condition(params: SqlParameters): string;
}

/**
 * `search` on file, folder and trash listings: a case-insensitive substring of the name, i.e. the
 * name key (nameKeyOf) contains the search's name key; `%`, `_` and `\` are literal (docs/files.md, "Search").
 *
 * How it is found (migration 1764340000000):
 *  - 3 characters or more: the trigram index (pg_trgm GIN on PostgreSQL, FTS5 trigram on SQLite) finds the
 *    few names that contain it in a lookup. On SQLite, which keeps no statistics, the index drives the
 *    query only when it holds fewer than INDEX_DRIVEN_LIMIT candidates (counted with a LIMIT, so the
 *    probe is bounded too, and remembered for PROBE_MEMORY_MS); a search that common is answered like a
 *    short one. PostgreSQL's planner makes that choice itself from pg_trgm's statistics.
 *  - 1 or 2 characters, or a common substring: `name_key LIKE '%x%'` on the listing's index range (one
 *    account's folder or trash), walked in the page's sort order until the page is full; the cost is
 *    bounded by the size of that one listing, never the whole table, and the count behind total_items
 *    is taken once per change of the account's files (ListingTotals).
 */
export async function nameSearchPlan(
  manager: Pick<EntityManager, 'query'>,
  dialect: SqlDialect,
  table: 'files' | 'folders',
  alias: string,
  search: string | undefined,
): Promise<NameSearchPlan> {
  const plain = { from: `${table} ${alias}`, condition: () => '' };
  if (!search) return plain;
  const key = nameKeyOf(search);
  const like = (params: SqlParameters) => `${alias}.name_key LIKE ${params.add(`%${escapeLike(key)}%`)} ESCAPE '\\' AND `;
  const phrase = dialect.trigramPhrase(key);
  const probe = dialect.trigramSearchProbe(table, dialect.parameter(1), INDEX_DRIVEN_LIMIT);
  const index = dialect.trigramSearch(table, alias);
  if ([...key].length < TRIGRAM_LENGTH || probe === null || index === null) return { from: plain.from, condition: like };
  if (await isCommon(manager, table, probe, phrase)) return { from: plain.from, condition: like };
  return {
    from: index.from,
    // LIKE again on the few candidates: the index finds them, the one rule decides.
    condition: (params) => `${index.contains(params.add(phrase))} AND ${like(params)}`,
  };
}
