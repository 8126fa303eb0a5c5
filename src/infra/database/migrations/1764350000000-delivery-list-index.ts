import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/**
 * A webhook's delivery log pages newest first with the id as tie-breaker, by page number or by keyset cursor
 * (`(created_at, id) < (…)`): with the id in the index, every page is one index range, however deep.
 */
export class DeliveryListIndex1764350000000 implements MigrationInterface {
  name = 'DeliveryListIndex1764350000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createIndex('webhook_deliveries', new TableIndex({ name: 'idx_webhook_deliveries_list', columnNames: ['webhook_id', 'created_at', 'id'] }));
    await queryRunner.dropIndex('webhook_deliveries', 'idx_webhook_deliveries_webhook');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createIndex('webhook_deliveries', new TableIndex({ name: 'idx_webhook_deliveries_webhook', columnNames: ['webhook_id', 'created_at'] }));
    await queryRunner.dropIndex('webhook_deliveries', 'idx_webhook_deliveries_list');
  }
}
