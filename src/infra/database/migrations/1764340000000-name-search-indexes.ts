import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/** The sort columns of file listings (ListFilesQuery); each has its own listing index. */
const FILE_SORT_COLUMNS = ['created_at', 'modified_at', 'name_key', 'size'] as const;
const FILE_LISTING_INDEX = { created_at: 'idx_files_by_created', modified_at: 'idx_files_by_modified', name_key: 'idx_files_by_name', size: 'idx_files_by_size' };
const SEARCHED_TABLES = ['files', 'folders'] as const;

/** The columns that decide which files a listing holds (migration 1763910000000), and now also their order. */
const LISTED_COLUMNS_BEFORE = 'account_id, state, folder_key, scan_status, category, name_key';
const LISTED_COLUMNS = `${LISTED_COLUMNS_BEFORE}, created_at, modified_at, size`;
const BUMP_SQLITE = (account: 'NEW' | 'OLD') =>
  `INSERT INTO file_listing_versions (account_id, version, changed_by_xact) VALUES (${account}.account_id, 1, 0) ` +
  'ON CONFLICT (account_id) DO UPDATE SET version = version + 1;';

/**
 * Indexed substring search of names, and file listings whose pages are found in the index alone.
 *
 * Search: `search=x` is a case-insensitive substring of the name, i.e. `name_key` (already lower-cased
 * by nameKeyOf) contains the name key of x.
 *  - PostgreSQL: pg_trgm and a GIN trigram index on name_key, which serves `name_key LIKE '%x%'` as it stands.
 *  - SQLite: an FTS5 trigram index per table (external content: it stores only the index, and reads the
 *    names from the table), kept in step with the table by triggers in the same transaction as the change.
 *    It is keyed by the table's rowid; names are indexed exactly as stored (case_sensitive 1), since
 *    name_key is already the case-folded form, so a phrase query is exactly a substring test. The service
 *    never runs VACUUM, which may renumber the rowids of tables without an INTEGER PRIMARY KEY; after a
 *    manual one, `INSERT INTO files_name_search (files_name_search) VALUES ('rebuild')` (and the same for
 *    folders_name_search) re-reads the names.
 *
 * Listing: the four sort indexes of `files` also carry scan_status and category, every column a listing
 * filters on, so the ids of a page (however deep) are found by an index-only scan, and only the page's
 * own rows are read from the table (a deferred join). The account's listing version is now also bumped
 * when a sort key changes (an overwrite changes size and modified_at), since deep pages start from rows
 * remembered under that version (PageAnchors).
 */
export class NameSearchIndexes1764340000000 implements MigrationInterface {
  name = 'NameSearchIndexes1764340000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const column of FILE_SORT_COLUMNS) {
      await queryRunner.dropIndex('files', FILE_LISTING_INDEX[column]);
      await queryRunner.createIndex(
        'files',
        new TableIndex({ name: FILE_LISTING_INDEX[column], columnNames: ['account_id', 'state', 'folder_key', column, 'id', 'scan_status', 'category'] }),
      );
    }
    await listingVersionTrigger(queryRunner, LISTED_COLUMNS);
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      for (const table of SEARCHED_TABLES) {
        const index = `${table}_name_search`;
        await queryRunner.query(`CREATE VIRTUAL TABLE ${index} USING fts5(name_key, content='${table}', content_rowid='rowid', tokenize='trigram case_sensitive 1')`);
        const remove = `INSERT INTO ${index} (${index}, rowid, name_key) VALUES ('delete', OLD.rowid, OLD.name_key);`;
        const add = `INSERT INTO ${index} (rowid, name_key) VALUES (NEW.rowid, NEW.name_key);`;
        await queryRunner.query(`CREATE TRIGGER trg_${index}_insert AFTER INSERT ON ${table} BEGIN ${add} END`);
        await queryRunner.query(`CREATE TRIGGER trg_${index}_delete AFTER DELETE ON ${table} BEGIN ${remove} END`);
        await queryRunner.query(`CREATE TRIGGER trg_${index}_update AFTER UPDATE OF name_key ON ${table} BEGIN ${remove} ${add} END`);
        await queryRunner.query(`INSERT INTO ${index} (${index}) VALUES ('rebuild')`);
      }
      return;
    }
    // A trusted extension since PostgreSQL 13: the database's owner may create it.
    await queryRunner.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    for (const table of SEARCHED_TABLES) {
      await queryRunner.query(`CREATE INDEX idx_${table}_name_trigrams ON ${table} USING gin (name_key gin_trgm_ops)`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await listingVersionTrigger(queryRunner, LISTED_COLUMNS_BEFORE);
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      for (const table of SEARCHED_TABLES) {
        for (const op of ['insert', 'delete', 'update']) await queryRunner.query(`DROP TRIGGER IF EXISTS trg_${table}_name_search_${op}`);
        await queryRunner.query(`DROP TABLE IF EXISTS ${table}_name_search`);
      }
    } else {
      // The extension stays: other databases' objects may use it, and it costs nothing unused.
      for (const table of SEARCHED_TABLES) await queryRunner.query(`DROP INDEX IF EXISTS idx_${table}_name_trigrams`);
    }
    for (const column of FILE_SORT_COLUMNS) {
      await queryRunner.dropIndex('files', FILE_LISTING_INDEX[column]);
      await queryRunner.createIndex('files', new TableIndex({ name: FILE_LISTING_INDEX[column], columnNames: ['account_id', 'state', 'folder_key', column, 'id'] }));
    }
  }
}

/** Re-creates the update trigger of file_listing_versions (migration 1763910000000) on `columns`. */
async function listingVersionTrigger(queryRunner: QueryRunner, columns: string): Promise<void> {
  if (queryRunner.connection.options.type === 'better-sqlite3') {
    await queryRunner.query('DROP TRIGGER trg_files_listing_update');
    await queryRunner.query(`CREATE TRIGGER trg_files_listing_update AFTER UPDATE OF ${columns} ON files BEGIN ${BUMP_SQLITE('OLD')} ${BUMP_SQLITE('NEW')} END`);
    return;
  }
  await queryRunner.query('DROP TRIGGER trg_files_listing_version ON files');
  await queryRunner.query(
    `CREATE CONSTRAINT TRIGGER trg_files_listing_version AFTER INSERT OR DELETE OR UPDATE OF ${columns} ON files ` +
      'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_file_listing_version()',
  );
}
