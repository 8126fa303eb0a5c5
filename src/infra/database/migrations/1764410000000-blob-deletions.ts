import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { text, timestamp } from './schema-helpers.js';

/**
 * Blobs whose file rows are gone, recorded in the transaction that removed the rows and deleted after it commits
 * (BlobDeletions): a store that fails the delete, or a process that dies first, leaves the record for the sweeper to
 * retry instead of an object nobody knows of.
 */
export class BlobDeletions1764410000000 implements MigrationInterface {
  name = 'BlobDeletions1764410000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'blob_deletions',
        columns: [{ ...text('blob_key', 500), isPrimary: true }, timestamp('recorded_at')],
        indices: [{ name: 'idx_blob_deletions_recorded', columnNames: ['recorded_at'] }],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('blob_deletions');
  }
}
