import type { EntityManager } from 'typeorm';
import { NotFound, ShareExpired } from '../../common/errors/api-error.js';
import { FileEntity } from '../files/file.entity.js';
import { ShareEntity } from './share.entity.js';
import { isShareTokenShaped } from './share-token.js';

export interface UsableShare {
  share: ShareEntity;
  file: FileEntity;
}

/**
 * The link behind a public token, if it may be used at all (password aside). Unknown, revoked and
 * invalidated links are indistinguishable (404). The file is checked too, not just the link's
 * invalidation mark, so a file that left the active state closes its links whatever wrote it.
 */
export async function findUsableShare(manager: EntityManager, token: string, now: Date): Promise<UsableShare> {
  const notFound = new NotFound('Share link');
  if (!isShareTokenShaped(token)) throw notFound;
  const share = await manager.getRepository(ShareEntity).findOneBy({ token });
  if (!share || share.isWithdrawn()) throw notFound;
  const file = await manager.getRepository(FileEntity).findOneBy({ id: share.fileId, accountId: share.accountId });
  if (!file || file.state !== 'active') throw notFound;
  if (share.hasExpired(now)) throw new ShareExpired();
  return { share, file };
}
