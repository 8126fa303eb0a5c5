import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sqlDialect } from '../../../infra/database/sql-dialect.js';

/** Enough for every folder and filter in use at once on a busy server; a total is a few dozen bytes. */
const MAX_TOTALS = 10_000;

/**
 * Exact `total_items` of file listings without counting on every request. A total is remembered
 * under the account's listing version (file_listing_versions, bumped by triggers on `files` in the
 * same transaction as the change, migrations 1763910000000 and 1764300000000), so it is reused only while none of the
 * account's files was added, removed, moved, renamed, trashed, restored or quarantined, by this
 * process or any other.
 */
/**
 * The account's listing version: one number that grows with every change to which files it lists or how they
 * sort. PostgreSQL spreads it over several rows (migration 1764300000000), so it is their sum.
 */
export function listingVersionSql(dataSource: DataSource): string {
  return `SELECT ${listingVersionExpression(sqlDialect(dataSource).parameter(1))} AS version`;
}

/**
 * The listing version as a scalar subquery (evaluated once per statement), so a page and the version it
 * belongs to are read in one statement: one round trip, and one snapshot on PostgreSQL.
 */
export function listingVersionExpression(accountIdSql: string): string {
  return `(SELECT SUM(version) FROM file_listing_versions WHERE account_id = ${accountIdSql})`;
}

/** A listing version as read from the database (a string on PostgreSQL, whose SUM is numeric); null before the first file. */
export type ListingVersion = string | number | null;

@Injectable()
export class ListingTotals {
  private readonly totals = new Map<string, Promise<number>>();
  private readonly versionSql: string;

  constructor(private readonly dataSource: DataSource) {
    this.versionSql = listingVersionSql(dataSource);
  }

  /**
   * The total for one account's listing `filter` (anything that decides which files match), counted
   * by `count` when not known for the current version. The version is read before counting: a
   * change committed in between makes the count newer than its version, never older, and the next
   * request reads the new version anyway.
   */
  async total(accountId: string, filter: string, count: () => Promise<number>): Promise<number> {
    const rows: { version: ListingVersion }[] = await this.dataSource.query(this.versionSql, [accountId]);
    return this.totalAt(rows[0]?.version ?? null, accountId, filter, count);
  }

  /**
   * As `total`, for a version the caller read itself (listingVersionExpression) before or with what
   * it lists: the count runs after, so it is never older than the version it is kept under.
   */
  async totalAt(version: ListingVersion, accountId: string, filter: string, count: () => Promise<number>): Promise<number> {
    const key = `${accountId}\u0000${version ?? 0}\u0000${filter}`;
    const known = this.totals.get(key);
    if (known) {
      // Least recently used goes first: re-insert to move this one to the end.
      this.totals.delete(key);
      this.totals.set(key, known);
      return known;
    }
    // Concurrent requests for the same listing share one count.
    const counting = count();
    this.totals.set(key, counting);
    counting.catch(() => this.totals.delete(key));
    if (this.totals.size > MAX_TOTALS) this.totals.delete(this.totals.keys().next().value!);
    return counting;
  }
}
