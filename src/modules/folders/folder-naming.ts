import type { EntityManager } from 'typeorm';
import { freeName } from '../files/name-collisions.js';
import { FolderEntity } from './folder.entity.js';

/** The name a folder takes among its siblings: `Photos (1)` when `Photos` is taken, the number always at the end (`Project.v2 (1)`). */
export function freeFolderName(tx: EntityManager, accountId: string, parentKey: string, name: string, exceptId?: string): Promise<string> {
  return freeName(tx, { entity: FolderEntity, parentColumn: 'parent_key', numbering: 'at-end' }, accountId, parentKey, name, exceptId);
}
