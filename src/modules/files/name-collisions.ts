import type { EntityManager, EntityTarget } from 'typeorm';
import { ApiError } from '../../common/errors/api-error.js';
import { sqlDialect } from '../../infra/database/sql-dialect.js';
import { isUniqueViolation } from '../../infra/database/transactions.js';
import { FileEntity } from './file.entity.js';
import { candidateNames, type NameNumbering, nameKeyOf } from './file-naming.js';

/** The answer retryOnNameCollision gives up with, for the OpenAPI document of the routes that name an item. */
export const NAME_CONFLICT: [number, string] = [409, 'conflict: too many concurrent changes to names in the target folder; retry the request.'];
/** For a rename or move, which also retries while other renames or moves of the same item commit first. */
export const RENAME_CONFLICT: [number, string] = [409, 'conflict: too many concurrent changes to names in the target folder, or to the item itself; retry the request.'];

/**
 * Runs a unit of work that names an item, again when a concurrent writer took the same name
 * between our check and our insert (PostgreSQL; SQLite transactions take turns).
 */
export async function retryOnNameCollision<T>(work: () => Promise<T>, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      if (attempt >= attempts) throw new ApiError(409, 'conflict', 'Too many concurrent changes to names in this folder; retry the request.');
    }
  }
}

/** Where an item's siblings are: its table, and the column holding the key of the folder they share. */
export interface SiblingsOf {
  entity: EntityTarget<{ id: string; nameKey: string }>;
  parentColumn: 'folder_key' | 'parent_key';
  numbering: NameNumbering;
}

/** How many candidate names one query looks up. */
const CANDIDATES_PER_QUERY = 100;

/**
 * The name an item takes among the active siblings under `parentKey` (`exceptId` being the item
 * itself): `name` when free, else `name (n).ext`. The candidates are looked up by their keys, a
 * hundred per query: a long name's numbered variants are shortened, so no one prefix finds them all.
 */
export async function freeName(tx: EntityManager, siblingsOf: SiblingsOf, accountId: string, parentKey: string, name: string, exceptId?: string): Promise<string> {
  // Writers naming items in one folder take turns until they commit (PostgreSQL; SQLite transactions already do): each
  // sees the names taken before it. Without this, thirty uploads of one name all chose the same next number, and the
  // retries of retryOnNameCollision ran out for half of them (409). Taken after the row and folder locks of the
  // callers, and nothing but their own inserts and the account row follow it.
  await sqlDialect(tx).takeTurnsOn(tx, `names:${siblingsOf.parentColumn}:${accountId}:${parentKey}`);
  const candidates = candidateNames(name, siblingsOf.numbering);
  for (;;) {
    const batch = Array.from({ length: CANDIDATES_PER_QUERY }, () => candidates.next().value);
    const siblings = await tx
      .getRepository(siblingsOf.entity)
      .createQueryBuilder('f')
      .select(['f.id', 'f.nameKey'])
      .where(`f.account_id = :accountId AND f.${siblingsOf.parentColumn} = :parentKey AND f.state = :state`, { accountId, parentKey, state: 'active' })
      .andWhere('f.name_key IN (:...keys)', { keys: batch.map(nameKeyOf) })
      .getMany();
    const taken = new Set(siblings.filter((f) => f.id !== exceptId).map((f) => f.nameKey));
    const free = batch.find((candidate) => !taken.has(nameKeyOf(candidate)));
    if (free !== undefined) return free;
  }
}

/** The name a file takes in a folder. */
export function freeFileName(tx: EntityManager, accountId: string, folderKey: string, name: string, exceptId?: string): Promise<string> {
  return freeName(tx, { entity: FileEntity, parentColumn: 'folder_key', numbering: 'before-extension' }, accountId, folderKey, name, exceptId);
}
