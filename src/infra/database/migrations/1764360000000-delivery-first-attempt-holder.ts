import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';
import { ref } from './schema-helpers.js';

/**
 * A delivery whose first attempt a server process makes itself, without a queue job, names that process
 * (`held_by`), so that once the process is dead another one queues the delivery. The partial index keeps the
 * check for such deliveries small: only deliveries held right now are in it.
 */
export class DeliveryFirstAttemptHolder1764360000000 implements MigrationInterface {
  name = 'DeliveryFirstAttemptHolder1764360000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('webhook_deliveries', new TableColumn(ref('held_by', true)));
    await queryRunner.createIndex('webhook_deliveries', new TableIndex({ name: 'idx_webhook_deliveries_held', columnNames: ['held_by'], where: 'held_by IS NOT NULL' }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('webhook_deliveries', 'idx_webhook_deliveries_held');
    await queryRunner.dropColumn('webhook_deliveries', 'held_by');
  }
}
