import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { integer } from './schema-helpers.js';

/**
 * Where a delivery's current series of attempts starts (`attempts_before_series`), on the row, so that a job
 * queued again for a series (by the sweep, after Redis lost the first job) counts that series' attempts from the
 * row rather than from the moment it was queued. New deliveries start at 0. A redelivery under way at the upgrade
 * has NULL: its job carries the count, as before.
 */
export class DeliverySeriesStart1764390000000 implements MigrationInterface {
  name = 'DeliverySeriesStart1764390000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('webhook_deliveries', new TableColumn(integer('attempts_before_series', { nullable: true, default: 0 })));
    await queryRunner.query('UPDATE webhook_deliveries SET attempts_before_series = NULL WHERE series > 1');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('webhook_deliveries', 'attempts_before_series');
  }
}
