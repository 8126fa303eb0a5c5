import type { EntityManager } from 'typeorm';
import { freeName } from '../files/name-collisions.js';
import { FolderEntity } from './folder.entity.js';

/** The name a folder takes among its siblings: as files do, `Photos (1)` when `Photos` is taken. */
export function freeFolderName(tx: EntityManager, accountId: string, parentKey: string, name: string, exceptId?: string): Promise<string> {
  return freeName(tx, { entity: FolderEntity, parentColumn: 'parent_key' }, accountId, parentKey, name, exceptId);
}
