import { MigrationInterface, QueryRunner, Table, TableColumn } from 'typeorm';
import { bigint, integer, longText, ref } from './schema-helpers.js';

/**
 * What a resumable upload has received, kept where every server process finds it:
 * - the MD5 of the bytes received so far as a saved hasher state (md5_state, valid for the first
 *   md5_offset bytes), so a PATCH that reaches another process, or a restarted one, goes on hashing
 *   instead of reading the bytes again;
 * - on S3, the multipart upload the bytes go to (storage_upload_id) and its parts
 *   (resumable_upload_parts), so the offset is known without S3's ListParts.
 */
export class ResumableUploadProgress1764310000000 implements MigrationInterface {
  name = 'ResumableUploadProgress1764310000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumns('resumable_uploads', [
      new TableColumn(longText('md5_state', true)),
      new TableColumn(bigint('md5_offset', { default: 0 })),
      new TableColumn(longText('storage_upload_id', true)),
    ]);
    await queryRunner.createTable(
      new Table({
        name: 'resumable_upload_parts',
        columns: [{ ...ref('upload_id'), isPrimary: true }, { ...integer('part_number'), isPrimary: true }, longText('etag'), bigint('size')],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('resumable_upload_parts');
    await queryRunner.dropColumn('resumable_uploads', 'storage_upload_id');
    await queryRunner.dropColumn('resumable_uploads', 'md5_offset');
    await queryRunner.dropColumn('resumable_uploads', 'md5_state');
  }
}
