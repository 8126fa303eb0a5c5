import { MigrationInterface, QueryRunner } from 'typeorm';

/** Concurrent transactions of one account bump different rows: a collision only when their ids agree modulo this. */
const SHARDS = 16;

/** The trigger function of migration 1763910000000, writing the `shard` column when given its value. */
const BUMP_FUNCTION = (shard: string | null) => `
  CREATE OR REPLACE FUNCTION bump_file_listing_version() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    changed_account varchar(40);
  BEGIN
    FOREACH changed_account IN ARRAY CASE TG_OP
      WHEN 'INSERT' THEN ARRAY[NEW.account_id]
      WHEN 'DELETE' THEN ARRAY[OLD.account_id]
      ELSE ARRAY[OLD.account_id, NEW.account_id] END
    LOOP
      -- Once per transaction and account: its changes become visible together at commit.
      INSERT INTO file_listing_versions AS current (account_id${shard ? ', shard' : ''}, version, changed_by_xact)
      VALUES (changed_account${shard ? `, ${shard}` : ''}, 1, txid_current())
      ON CONFLICT (account_id${shard ? ', shard' : ''}) DO UPDATE SET version = current.version + 1, changed_by_xact = EXCLUDED.changed_by_xact
      WHERE current.changed_by_xact <> EXCLUDED.changed_by_xact;
    END LOOP;
    RETURN NULL;
  END $$`;

/**
 * file_listing_versions (migration 1763910000000) held one row per account that every transaction
 * adding, removing or changing a listed file bumped at commit: concurrent uploads of one account
 * queued on that row's lock, one commit after the other, and left a dead row version each. On
 * PostgreSQL each account now has up to 16 rows, and a transaction bumps the one its transaction id
 * picks, so concurrent commits rarely meet; the account's version is the sum of its rows, which
 * still grows with every change. SQLite has a single writer and keeps its single row (shard 0).
 */
export class ListingVersionShards1764300000000 implements MigrationInterface {
  name = 'ListingVersionShards1764300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') return;
    await queryRunner.query('ALTER TABLE file_listing_versions ADD COLUMN shard smallint NOT NULL DEFAULT 0');
    await this.replacePrimaryKey(queryRunner, 'account_id, shard');
    await queryRunner.query(BUMP_FUNCTION(`(txid_current() % ${SHARDS})::smallint`));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') return;
    await queryRunner.query(
      'CREATE TEMPORARY TABLE folded_listing_versions AS SELECT account_id, SUM(version) AS version, MAX(changed_by_xact) AS changed_by_xact FROM file_listing_versions GROUP BY account_id',
    );
    await queryRunner.query('DELETE FROM file_listing_versions');
    await queryRunner.query('ALTER TABLE file_listing_versions DROP COLUMN shard');
    await queryRunner.query('INSERT INTO file_listing_versions (account_id, version, changed_by_xact) SELECT account_id, version, changed_by_xact FROM folded_listing_versions');
    await queryRunner.query('DROP TABLE folded_listing_versions');
    await this.replacePrimaryKey(queryRunner, 'account_id');
    await queryRunner.query(BUMP_FUNCTION(null));
  }

  private async replacePrimaryKey(queryRunner: QueryRunner, columns: string): Promise<void> {
    const [primaryKey] = (await queryRunner.query(
      "SELECT conname FROM pg_constraint WHERE conrelid = 'file_listing_versions'::regclass AND contype = 'p'",
    )) as { conname: string }[];
    if (primaryKey) await queryRunner.query(`ALTER TABLE file_listing_versions DROP CONSTRAINT "${primaryKey.conname}"`);
    await queryRunner.query(`ALTER TABLE file_listing_versions ADD PRIMARY KEY (${columns})`);
  }
}
