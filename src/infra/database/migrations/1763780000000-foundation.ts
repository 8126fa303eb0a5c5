import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { bigint, boolean, id, integer, longText, ref, text, timestamp } from './schema-helpers.js';

/** Accounts, users, API keys, and the outbox that carries domain events to webhooks. */
export class Foundation1763780000000 implements MigrationInterface {
  name = 'Foundation1763780000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'accounts',
        columns: [
          id(),
          text('name', 200),
          text('plan', 20),
          bigint('storage_limit_override', { nullable: true }),
          bigint('storage_used', { default: 0 }),
          bigint('storage_reserved', { default: 0 }),
          integer('storage_warning_level', { default: 0 }),
          timestamp('created_at'),
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'users',
        columns: [id(), ref('account_id'), text('name', 200), timestamp('created_at')],
        foreignKeys: [{ columnNames: ['account_id'], referencedTableName: 'accounts', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
        indices: [{ name: 'idx_users_account', columnNames: ['account_id'] }],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'api_keys',
        columns: [
          id(),
          ref('account_id'),
          ref('user_id'),
          text('name', 200),
          text('key_hash', 64),
          text('key_prefix', 16),
          text('scopes', 100),
          boolean('elevated', false),
          timestamp('created_at'),
          timestamp('last_used_at', true),
          timestamp('revoked_at', true),
        ],
        foreignKeys: [
          { columnNames: ['account_id'], referencedTableName: 'accounts', referencedColumnNames: ['id'], onDelete: 'CASCADE' },
          { columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'], onDelete: 'CASCADE' },
        ],
        indices: [
          { name: 'uq_api_keys_hash', columnNames: ['key_hash'], isUnique: true },
          { name: 'idx_api_keys_account', columnNames: ['account_id'] },
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'outbox_events',
        columns: [
          id(),
          ref('account_id'),
          text('event', 60),
          longText('payload'),
          timestamp('occurred_at'),
          timestamp('relayed_at', true),
        ],
        indices: [{ name: 'idx_outbox_pending', columnNames: ['relayed_at', 'occurred_at'] }],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('outbox_events');
    await queryRunner.dropTable('api_keys');
    await queryRunner.dropTable('users');
    await queryRunner.dropTable('accounts');
  }
}
