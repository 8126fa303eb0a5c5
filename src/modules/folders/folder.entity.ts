import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../../infra/database/columns.js';

export type FolderState = 'active' | 'trashed';

/** A folder; nests under another folder or the root. Sibling names are unique case-insensitively. */
@Entity('folders')
export class FolderEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Column({ type: 'varchar', length: 40, name: 'account_id' }) accountId: string;
  @Column({ type: 'varchar', length: 40, name: 'parent_id', nullable: true }) parentId: string | null;
  /** The parent id, or '' for the root (see FileEntity.folderKey). */
  @Column({ type: 'varchar', length: 40, name: 'parent_key' }) parentKey: string;
  @Column({ type: 'varchar', length: 255 }) name: string;
  @Column({ type: 'varchar', length: 255, name: 'name_key' }) nameKey: string;
  @Column({ type: 'varchar', length: 20 }) state: FolderState;
  @Column({ type: 'varchar', length: 40, name: 'created_by' }) createdBy: string;
  @Column({ ...TIMESTAMP_COLUMN, name: 'created_at' }) createdAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'modified_at' }) modifiedAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'deleted_at', nullable: true }) deletedAt: Date | null;
}
