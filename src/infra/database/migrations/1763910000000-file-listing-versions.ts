import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { bigint, id } from './schema-helpers.js';

/** The columns a folder listing's total depends on (which rows match, not how they sort). */
const LISTED_COLUMNS = 'account_id, state, folder_key, scan_status, category, name_key';

const BUMP_SQLITE = (account: 'NEW' | 'OLD') =>
  `INSERT INTO file_listing_versions (account_id, version, changed_by_xact) VALUES (${account}.account_id, 1, 0) ` +
  'ON CONFLICT (account_id) DO UPDATE SET version = version + 1;';

/**
 * A per-account version of the `files` rows a listing counts, bumped by triggers in the same
 * transaction as any insert, delete or change of a listed column. A listing's total_items may be
 * cached under (account, version): a cached total is only reused while no file of the account has
 * changed, whichever process or connection made the change.
 *
 * PostgreSQL: a deferred constraint trigger, so the version row is locked only at commit, after
 * every other lock of the transaction (no new deadlocks), and bumped once per transaction.
 * SQLite has a single writer, so plain row triggers do.
 */
export class FileListingVersions1763910000000 implements MigrationInterface {
  name = 'FileListingVersions1763910000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'file_listing_versions',
        // No foreign key: an account's deletion cascades to its files, whose triggers still write here.
        columns: [{ ...id('account_id'), isPrimary: true }, bigint('version', { default: 0 }), bigint('changed_by_xact', { default: 0 })],
      }),
    );
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query(`CREATE TRIGGER trg_files_listing_insert AFTER INSERT ON files BEGIN ${BUMP_SQLITE('NEW')} END`);
      await queryRunner.query(`CREATE TRIGGER trg_files_listing_delete AFTER DELETE ON files BEGIN ${BUMP_SQLITE('OLD')} END`);
      // A move to another account does not happen, but would count for both.
      await queryRunner.query(
        `CREATE TRIGGER trg_files_listing_update AFTER UPDATE OF ${LISTED_COLUMNS} ON files BEGIN ${BUMP_SQLITE('OLD')} ${BUMP_SQLITE('NEW')} END`,
      );
      return;
    }
    await queryRunner.query(`
      CREATE FUNCTION bump_file_listing_version() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        changed_account varchar(40);
      BEGIN
        FOREACH changed_account IN ARRAY CASE TG_OP
          WHEN 'INSERT' THEN ARRAY[NEW.account_id]
          WHEN 'DELETE' THEN ARRAY[OLD.account_id]
          ELSE ARRAY[OLD.account_id, NEW.account_id] END
        LOOP
          -- Once per transaction and account: its changes become visible together at commit.
          INSERT INTO file_listing_versions AS current (account_id, version, changed_by_xact)
          VALUES (changed_account, 1, txid_current())
          ON CONFLICT (account_id) DO UPDATE SET version = current.version + 1, changed_by_xact = EXCLUDED.changed_by_xact
          WHERE current.changed_by_xact <> EXCLUDED.changed_by_xact;
        END LOOP;
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE CONSTRAINT TRIGGER trg_files_listing_version AFTER INSERT OR DELETE OR UPDATE OF ${LISTED_COLUMNS} ON files ` +
        'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_file_listing_version()',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      for (const op of ['insert', 'delete', 'update']) await queryRunner.query(`DROP TRIGGER IF EXISTS trg_files_listing_${op}`);
    } else {
      await queryRunner.query('DROP TRIGGER IF EXISTS trg_files_listing_version ON files');
      await queryRunner.query('DROP FUNCTION IF EXISTS bump_file_listing_version()');
    }
    await queryRunner.dropTable('file_listing_versions');
  }
}
