import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Two jobs of every ten minutes look for a few rows in tables of millions: the stalled-media sweep for scans and
 * thumbnails still pending long after their file changed, and the trash purge for deleted folders past their window.
 * Without an index each look read the whole of `files`, `file_media` or `folders`, on SQLite on the server's own
 * connection. These partial indexes hold only the rows in those states, so they stay small and cost a write next to
 * nothing. The queries name the state as a literal, which is what lets SQLite use a partial index.
 */
export class PartialStateIndexes1764400000000 implements MigrationInterface {
  name = 'PartialStateIndexes1764400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("CREATE INDEX idx_files_scan_pending ON files (modified_at) WHERE scan_status = 'pending'");
    await queryRunner.query("CREATE INDEX idx_file_media_thumbnail_pending ON file_media (updated_at) WHERE thumbnail_status = 'pending'");
    await queryRunner.query("CREATE INDEX idx_folders_trashed ON folders (deleted_at) WHERE state = 'trashed'");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX idx_folders_trashed');
    await queryRunner.query('DROP INDEX idx_file_media_thumbnail_pending');
    await queryRunner.query('DROP INDEX idx_files_scan_pending');
  }
}
