import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { text, timestamp } from './schema-helpers.js';

/**
 * Secret rotation: the secret a rotation replaced keeps signing deliveries beside the new one until
 * previous_secret_expires_at. Both null when only the current secret signs.
 */
export class WebhookSecretRotation1764330000000 implements MigrationInterface {
  name = 'WebhookSecretRotation1764330000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumns('webhooks', [text('previous_secret_sealed', 300, true), timestamp('previous_secret_expires_at', true)].map((column) => new TableColumn(column)));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumns('webhooks', ['previous_secret_expires_at', 'previous_secret_sealed']);
  }
}
