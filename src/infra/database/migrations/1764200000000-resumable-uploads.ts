import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { bigint, boolean, id, longText, ref, text, timestamp } from './schema-helpers.js';

/**
 * Resumable (tus) uploads: what the creation request asked for (name, folder, overwrite, length,
 * the client's metadata) and until when the upload may sit idle. The quota it holds and where its
 * bytes stream to are its upload_reservations row (same id); the bytes received so far are the
 * size of its temporary blob, so nothing here changes per chunk except expires_at.
 */
export class ResumableUploads1764200000000 implements MigrationInterface {
  name = 'ResumableUploads1764200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'resumable_uploads',
        columns: [
          id(),
          ref('account_id'),
          text('name', 255),
          ref('folder_id', true),
          boolean('overwrite', false),
          bigint('length', { nullable: true }),
          longText('metadata'),
          timestamp('created_at'),
          timestamp('expires_at'),
          ref('file_id', true),
        ],
      }),
    );
    await queryRunner.createIndex('resumable_uploads', new TableIndex({ name: 'idx_resumable_uploads_expires', columnNames: ['expires_at'] }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('resumable_uploads');
  }
}
