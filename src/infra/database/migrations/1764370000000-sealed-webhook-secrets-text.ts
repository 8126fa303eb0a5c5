import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { longText, text } from './schema-helpers.js';

/** The columns holding a sealed webhook secret (WebhookSecretBox: 43 + ceil(4n/3) characters for n UTF-8 bytes). */
const SEALED_COLUMNS = [
  { name: 'secret_sealed', nullable: false },
  { name: 'previous_secret_sealed', nullable: true },
];

/**
 * A secret may have 256 characters, of several UTF-8 bytes each, and seals to far more than the
 * varchar(300) these columns had: PostgreSQL refused a secret of more than 192 ASCII characters. They
 * become `text`. SQLite never enforced the length; its table is rebuilt only so that the declared types
 * are the entity's there too (migrations run with its foreign keys off, so the rebuild cascades nothing).
 */
export class SealedWebhookSecretsText1764370000000 implements MigrationInterface {
  name = 'SealedWebhookSecretsText1764370000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await changeSealedColumns(queryRunner, 'text');
  }

  /** On PostgreSQL this fails, changing nothing, while a stored secret is too long for varchar(300). */
  async down(queryRunner: QueryRunner): Promise<void> {
    await changeSealedColumns(queryRunner, 'varchar(300)');
  }
}

async function changeSealedColumns(queryRunner: QueryRunner, type: 'text' | 'varchar(300)'): Promise<void> {
  if (queryRunner.connection.options.type === 'better-sqlite3') {
    const column = (name: string, nullable: boolean, as: typeof type) => new TableColumn(as === 'text' ? longText(name, nullable) : text(name, 300, nullable));
    const from = type === 'text' ? 'varchar(300)' : 'text';
    await queryRunner.changeColumns(
      'webhooks',
      SEALED_COLUMNS.map(({ name, nullable }) => ({ oldColumn: column(name, nullable, from), newColumn: column(name, nullable, type) })),
    );
    return;
  }
  // Not changeColumns: TypeORM's PostgreSQL runner drops and re-adds a column whose type changes, losing its values.
  for (const { name } of SEALED_COLUMNS) await queryRunner.query(`ALTER TABLE webhooks ALTER COLUMN ${name} TYPE ${type}`);
}
