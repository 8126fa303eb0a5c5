import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { listingVersionSql } from './listing-totals.js';

/** Rows between two anchors: the most an OFFSET ever skips once a listing's anchors are known. */
export const ANCHOR_STRIDE = 2_000;
/** Listings whose anchors are kept (least recently used go first); an anchor is a few dozen bytes. */
const MAX_LISTINGS = 1_000;

/** The sort key and id of one row of a listing. */
export interface Anchor {
  key: string | number;
  id: string;
}

/** Where a page starts: after `after` (null: from the first row), skipping `offset` rows. */
export interface PageStart {
  after: Anchor | null;
  offset: number;
}

/**
 * Deep page numbers without deep OFFSETs. For one listing (account, folder, filter, search, sort) this
 * remembers the row at every ANCHOR_STRIDE-th position; page n then starts at the anchor just before
 * its offset (an index seek) and skips fewer than ANCHOR_STRIDE index entries. Anchors are found
 * lazily, each from the one before (a skip of ANCHOR_STRIDE), only as deep as pages are asked for.
 *
 * They are kept under the account's listing version (listingVersionSql: bumped in the transaction
 * of any change to which files are listed or how they sort, migrations 1763910000000 and 1764340000000),
 * so they are only used while the positions they record are still true, whichever process changed what.
 */
@Injectable()
export class PageAnchors {
  private readonly listings = new Map<string, { anchors: Anchor[]; extending: Promise<unknown> }>();
  private readonly versionSql: string;

  constructor(private readonly dataSource: DataSource) {
    this.versionSql = listingVersionSql(dataSource);
  }

  /**
   * Where the page at `offset` of `listing` starts. `next(after)` answers the row ANCHOR_STRIDE - 1 rows
   * after `after` (or at position ANCHOR_STRIDE - 1 for null), or null past the end.
   */
  async start(accountId: string, listing: string, offset: number, next: (after: Anchor | null) => Promise<Anchor | null>): Promise<PageStart> {
    const block = Math.floor(offset / ANCHOR_STRIDE);
    if (block === 0) return { after: null, offset };
    // Read before the anchors are found: anchors newer than their version are harmless, older never happen.
    const rows: { version: string | number }[] = await this.dataSource.query(this.versionSql, [accountId]);
    const key = `${accountId}\u0000${rows[0]?.version ?? 0}\u0000${listing}`;
    let entry = this.listings.get(key);
    if (entry) this.listings.delete(key); // re-inserted below: least recently used goes first
    entry ??= { anchors: [], extending: Promise.resolve() };
    this.listings.set(key, entry);
    if (this.listings.size > MAX_LISTINGS) this.listings.delete(this.listings.keys().next().value!);

    const known = entry;
    // One extension at a time per listing: concurrent deep pages share the anchors found.
    const extended = known.extending.then(async () => {
      while (known.anchors.length < block) {
        const anchor = await next(known.anchors.at(-1) ?? null);
        if (!anchor) return false;
        known.anchors.push(anchor);
      }
      return true;
    });
    known.extending = extended.catch(() => undefined);
    // Past the last row: the page is empty either way, and a plain OFFSET says so.
    if (!(await extended)) return { after: null, offset };
    return { after: known.anchors[block - 1], offset: offset - block * ANCHOR_STRIDE };
  }
}
