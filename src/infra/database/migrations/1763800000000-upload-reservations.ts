import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { bigint, id, ref, text, timestamp } from './schema-helpers.js';

/**
 * Quota held by uploads still streaming. Each row mirrors what it added to accounts.storage_reserved,
 * so a crashed process's reservations can be found and given back (and its temp blob removed).
 */
export class UploadReservations1763800000000 implements MigrationInterface {
  name = 'UploadReservations1763800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'upload_reservations',
        columns: [id(), ref('account_id'), bigint('bytes', { default: 0 }), text('temp_key', 200), timestamp('created_at'), timestamp('updated_at')],
        foreignKeys: [{ columnNames: ['account_id'], referencedTableName: 'accounts', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
        indices: [{ name: 'idx_upload_reservations_updated', columnNames: ['updated_at'] }],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('upload_reservations');
  }
}
