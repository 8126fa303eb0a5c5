import type { SqlParameters } from './sql-dialect.js';

/** A sort key value as the database holds it: text (names, ISO timestamps) or a number (sizes). */
export type KeysetValue = string | number;

/** Where a keyset page ends: the last row's sort key and its id (the tie-breaker). */
export type KeysetPosition = readonly [key: KeysetValue, id: string];

/** A listing's order: one sort column, then the id in the same direction, so every row has a unique place. */
export interface KeysetOrder {
  column: string;
  id: string;
  descending: boolean;
}

/** The ORDER BY terms of `order`, as SQL. */
export function keysetOrderBy(order: KeysetOrder): string {
  const direction = order.descending ? 'DESC' : 'ASC';
  return `${order.column} ${direction}, ${order.id} ${direction}`;
}

/** The ORDER BY terms of `order` for TypeORM's query builder (`orderBy`). */
export function keysetOrderByCondition(order: KeysetOrder): Record<string, 'ASC' | 'DESC'> {
  const direction = order.descending ? 'DESC' : 'ASC';
  return { [order.column]: direction, [order.id]: direction };
}

/**
 * The condition for rows strictly after a position in `order`, as one row-value comparison: SQLite
 * (3.15+) and PostgreSQL both read `(key, id) > (?, ?)` as a range of the (…, key, id) index, so a page
 * deep in a listing costs what the first one does. Rows inserted or deleted elsewhere in the order do
 * not move the position, unlike an OFFSET.
 */
export function keysetAfter(order: KeysetOrder, placeholders: readonly [key: string, id: string]): string {
  return `(${order.column}, ${order.id}) ${order.descending ? '<' : '>'} (${placeholders[0]}, ${placeholders[1]})`;
}

/** `keysetAfter` with its two values added to positional parameters. */
export function keysetAfterParameters(order: KeysetOrder, params: SqlParameters, position: KeysetPosition): string {
  return keysetAfter(order, [params.add(position[0]), params.add(position[1])]);
}
