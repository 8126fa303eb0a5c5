import { MigrationInterface, QueryRunner, Table, TableColumn, TableIndex } from 'typeorm';
import { id, longText, ref, timestamp } from './schema-helpers.js';

/**
 * Liveness of server processes, so that the uploads a crashed or killed process was receiving are
 * reclaimed as soon as it is known dead (no heartbeat for 3 beats) rather than after an hour.
 * An upload reservation records its process, and after the file row commits it stays (with no
 * bytes) until the temporary blob has moved and replaced blobs are deleted, so a crash in between
 * is finished by the sweeper too.
 */
export class ServerInstances1763950000000 implements MigrationInterface {
  name = 'ServerInstances1763950000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(new Table({ name: 'server_instances', columns: [id(), timestamp('started_at'), timestamp('heartbeat_at')] }));
    await queryRunner.addColumns('upload_reservations', [ref('instance_id', true), ref('file_id', true), longText('obsolete_blob_keys', true)].map((column) => new TableColumn(column)));
    await queryRunner.createIndex('upload_reservations', new TableIndex({ name: 'idx_upload_reservations_instance', columnNames: ['instance_id'] }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('upload_reservations', 'idx_upload_reservations_instance');
    for (const column of ['obsolete_blob_keys', 'file_id', 'instance_id']) await queryRunner.dropColumn('upload_reservations', column);
    await queryRunner.dropTable('server_instances');
  }
}
