import { type EntityManager, In } from 'typeorm';
import { ShareEntity } from '../shares/share.entity.js';

/** Which of these files have a live share link: not revoked, not invalidated, not expired. */
export async function sharedFileIds(manager: EntityManager, fileIds: string[], now: Date): Promise<Set<string>> {
  if (fileIds.length === 0) return new Set();
  const rows = await manager
    .getRepository(ShareEntity)
    .createQueryBuilder('s')
    .select('DISTINCT s.file_id', 'file_id')
    .where({ fileId: In(fileIds) })
    .andWhere('s.revoked_at IS NULL AND s.invalidated_at IS NULL')
    .andWhere('(s.expires_at IS NULL OR s.expires_at > :now)', { now: now.toISOString() })
    .getRawMany<{ file_id: string }>();
  return new Set(rows.map((r) => r.file_id));
}

/** The same condition as `sharedFileIds` for one file inside a query: `fileIdSql` names its id, `nowParameter` holds the ISO time. */
export function liveShareExistsSql(fileIdSql: string, nowParameter: string): string {
  return (
    `EXISTS (SELECT 1 FROM shares s WHERE s.file_id = ${fileIdSql} AND s.revoked_at IS NULL AND s.invalidated_at IS NULL ` +
    `AND (s.expires_at IS NULL OR s.expires_at > ${nowParameter}))`
  );
}
