import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { text, timestamp } from './schema-helpers.js';

/**
 * Background media work per file: which stored version (blob) the row describes, how its thumbnail
 * went, and what the virus scan found. `files.scan_status` and `files.thumbnail_key` stay the
 * public truth; this table holds the bookkeeping behind them (failure reasons, the threat name).
 */
export class FileMedia1763810000000 implements MigrationInterface {
  name = 'FileMedia1763810000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'file_media',
        columns: [
          { ...text('file_id', 40), isPrimary: true },
          text('blob_key', 200),
          text('thumbnail_status', 20),
          text('thumbnail_error', 500, true),
          text('scan_threat', 200, true),
          text('scan_note', 500, true),
          timestamp('scanned_at', true),
          timestamp('updated_at'),
        ],
        foreignKeys: [{ columnNames: ['file_id'], referencedTableName: 'files', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('file_media');
  }
}
