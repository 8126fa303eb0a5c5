import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/** The listing indexes of the sorts other than by name (the name index has name_key as its sort key already). */
const INDEX_OF_SORT = { created_at: 'idx_files_by_created', modified_at: 'idx_files_by_modified', size: 'idx_files_by_size' } as const;
const LEADING_COLUMNS = ['account_id', 'state', 'folder_key'];
const FILTER_COLUMNS = ['scan_status', 'category'];

/**
 * A search of one or two characters (which no trigram index serves) walks the listing's sort index testing each
 * name key; without name_key in the index, every entry cost a table row read: 0.35–0.95 s for a search matching
 * nothing in 100,000 files sorted by date on SQLite, against 50 ms from the index alone. Now every listing index holds
 * every column a listing filters on, name_key included, so that walk is index-only too.
 */
export class ListingIndexesCarryNameKey1764430000000 implements MigrationInterface {
  name = 'ListingIndexesCarryNameKey1764430000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await this.rebuild(queryRunner, ['name_key']);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await this.rebuild(queryRunner, []);
  }

  private async rebuild(queryRunner: QueryRunner, extra: string[]): Promise<void> {
    for (const [column, name] of Object.entries(INDEX_OF_SORT)) {
      await queryRunner.dropIndex('files', name);
      await queryRunner.createIndex('files', new TableIndex({ name, columnNames: [...LEADING_COLUMNS, column, 'id', ...FILTER_COLUMNS, ...extra] }));
    }
  }
}
