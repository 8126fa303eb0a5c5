import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { boolean, id, integer, longText, ref, text, timestamp } from './schema-helpers.js';

/** Webhooks and their delivery log. */
export class Webhooks1763785000000 implements MigrationInterface {
  name = 'Webhooks1763785000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'webhooks',
        columns: [
          id(),
          ref('account_id'),
          text('url', 2048),
          text('events', 400),
          text('secret_sealed', 300),
          boolean('active', true),
          timestamp('created_at'),
          timestamp('updated_at'),
          timestamp('failing_since', true),
          text('disabled_reason', 60, true),
          timestamp('disabled_at', true),
        ],
        foreignKeys: [{ columnNames: ['account_id'], referencedTableName: 'accounts', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
        indices: [{ name: 'idx_webhooks_account', columnNames: ['account_id'] }],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'webhook_deliveries',
        columns: [
          id(),
          ref('webhook_id'),
          ref('account_id'),
          ref('event_id'),
          text('event', 60),
          longText('body'),
          text('status', 12),
          integer('attempts', { default: 0 }),
          integer('series', { default: 1 }),
          timestamp('created_at'),
          timestamp('last_attempt_at', true),
          timestamp('next_attempt_at', true),
          integer('response_status', { nullable: true }),
          text('error', 500, true),
          longText('attempt_log'),
          timestamp('queued_at', true),
        ],
        foreignKeys: [{ columnNames: ['webhook_id'], referencedTableName: 'webhooks', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
        indices: [
          { name: 'uq_webhook_deliveries_event', columnNames: ['event_id', 'webhook_id'], isUnique: true },
          { name: 'idx_webhook_deliveries_webhook', columnNames: ['webhook_id', 'created_at'] },
          { name: 'idx_webhook_deliveries_unqueued', columnNames: ['queued_at', 'created_at'] },
          { name: 'idx_webhook_deliveries_due', columnNames: ['status', 'next_attempt_at'] },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('webhook_deliveries');
    await queryRunner.dropTable('webhooks');
  }
}
