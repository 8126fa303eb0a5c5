import type { FileEntity } from '../files/file.entity.js';

/**
 * The recovery window, the one rule that the trash listing, restore and the purge share: a trashed file is in the
 * trash (listed, counted, found by search, restorable) while now is before its recoverable_until; from that instant
 * on it is the purge's, whether or not the purge has run yet (it runs every TRASH_PURGE_CRON, not on the dot).
 */
export function isRecoverable(file: Pick<FileEntity, 'state' | 'recoverableUntil'>, now: Date): boolean {
  return file.state === 'trashed' && file.recoverableUntil !== null && file.recoverableUntil > now;
}

/** SQL: the recoverable_until `column` of a trashed file is still open at the ISO timestamp in `nowPlaceholder`. */
export function stillRecoverableSql(column: string, nowPlaceholder: string): string {
  return `${column} > ${nowPlaceholder}`;
}

/** SQL: the complement of stillRecoverableSql, the files the purge deletes. */
export function expiredSql(column: string, nowPlaceholder: string): string {
  return `${column} <= ${nowPlaceholder}`;
}
