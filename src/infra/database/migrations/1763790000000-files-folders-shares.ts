import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { bigint, id, integer, ref, text, timestamp } from './schema-helpers.js';

/**
 * Files, folders and share links. The list indexes lead with (account, state, folder) and end with
 * the sort key and id, so a page of any sort order is an index range scan, ties broken by id.
 */
export class FilesFoldersShares1763790000000 implements MigrationInterface {
  name = 'FilesFoldersShares1763790000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'folders',
        columns: [
          id(),
          ref('account_id'),
          ref('parent_id', true),
          text('parent_key', 40),
          text('name', 255),
          text('name_key', 255),
          text('state', 20),
          ref('created_by'),
          timestamp('created_at'),
          timestamp('modified_at'),
          timestamp('deleted_at', true),
        ],
        foreignKeys: [{ columnNames: ['account_id'], referencedTableName: 'accounts', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
        indices: [
          { name: 'uq_folders_active_name', columnNames: ['account_id', 'parent_key', 'name_key'], isUnique: true, where: "state = 'active'" },
          { name: 'idx_folders_list', columnNames: ['account_id', 'state', 'parent_key', 'name_key', 'id'] },
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'files',
        columns: [
          id(),
          ref('account_id'),
          ref('folder_id', true),
          text('folder_key', 40),
          text('name', 255),
          text('name_key', 255),
          bigint('size'),
          text('mime_type', 255),
          text('category', 20),
          text('md5', 32),
          text('blob_key', 200),
          text('state', 20),
          { ...text('scan_status', 20), default: "'pending'" },
          text('thumbnail_key', 200, true),
          ref('uploaded_by'),
          timestamp('created_at'),
          timestamp('modified_at'),
          timestamp('deleted_at', true),
          ref('deleted_by', true),
          timestamp('recoverable_until', true),
        ],
        foreignKeys: [{ columnNames: ['account_id'], referencedTableName: 'accounts', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
        indices: [
          { name: 'uq_files_active_name', columnNames: ['account_id', 'folder_key', 'name_key'], isUnique: true, where: "state = 'active'" },
          { name: 'idx_files_by_created', columnNames: ['account_id', 'state', 'folder_key', 'created_at', 'id'] },
          { name: 'idx_files_by_modified', columnNames: ['account_id', 'state', 'folder_key', 'modified_at', 'id'] },
          { name: 'idx_files_by_name', columnNames: ['account_id', 'state', 'folder_key', 'name_key', 'id'] },
          { name: 'idx_files_by_size', columnNames: ['account_id', 'state', 'folder_key', 'size', 'id'] },
          { name: 'idx_files_trash', columnNames: ['account_id', 'state', 'deleted_at', 'id'] },
          { name: 'idx_files_purge', columnNames: ['state', 'recoverable_until'] },
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'shares',
        columns: [
          id(),
          ref('account_id'),
          ref('file_id'),
          text('token', 64),
          text('password_hash', 255, true),
          timestamp('expires_at', true),
          ref('created_by'),
          timestamp('created_at'),
          timestamp('revoked_at', true),
          timestamp('invalidated_at', true),
          integer('access_count', { default: 0 }),
          timestamp('last_accessed_at', true),
        ],
        foreignKeys: [{ columnNames: ['account_id'], referencedTableName: 'accounts', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
        indices: [
          { name: 'uq_shares_token', columnNames: ['token'], isUnique: true },
          { name: 'idx_shares_file', columnNames: ['file_id', 'revoked_at', 'invalidated_at'] },
          { name: 'idx_shares_account', columnNames: ['account_id', 'created_at', 'id'] },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('shares');
    await queryRunner.dropTable('files');
    await queryRunner.dropTable('folders');
  }
}
