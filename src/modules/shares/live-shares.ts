import { type EntityManager, In } from 'typeorm';
import { ShareEntity } from './share.entity.js';

/**
 * The rule of a live share link (one that works, and makes its file `is_shared`) in SQL: neither revoked,
 * nor invalidated, nor expired. `ShareEntity.isActive` is the same rule for a loaded row.
 * `alias` names the shares table, `nowParameter` holds the ISO time.
 */
function liveShareCondition(alias: string, nowParameter: string): string {
  return `${alias}.revoked_at IS NULL AND ${alias}.invalidated_at IS NULL AND (${alias}.expires_at IS NULL OR ${alias}.expires_at > ${nowParameter})`;
}

/** Which of these files have a live share link. */
export async function sharedFileIds(manager: EntityManager, fileIds: string[], now: Date): Promise<Set<string>> {
  if (fileIds.length === 0) return new Set();
  const rows = await manager
    .getRepository(ShareEntity)
    .createQueryBuilder('s')
    .select('DISTINCT s.file_id', 'file_id')
    .where({ fileId: In(fileIds) })
    .andWhere(liveShareCondition('s', ':now'), { now: now.toISOString() })
    .getRawMany<{ file_id: string }>();
  return new Set(rows.map((r) => r.file_id));
}

/** Whether one file has a live share link, inside a query: `fileIdSql` names its id, `nowParameter` holds the ISO time. */
export function liveShareExistsSql(fileIdSql: string, nowParameter: string): string {
  return `EXISTS (SELECT 1 FROM shares s WHERE s.file_id = ${fileIdSql} AND ${liveShareCondition('s', nowParameter)})`;
}
