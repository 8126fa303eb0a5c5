import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event feed and webhook replay.
 * - outbox_events.feed_position: the event's place in the feed, stamped after its transaction committed
 *   (see EventSequencer); null until then. event_feed_sequence holds the last position handed out (so
 *   positions never repeat, even when every row has been trimmed) and the highest position trimmed.
 * - webhook_deliveries.origin: `event` for the delivery the relay made, `replay` for one a replay made.
 *   One delivery per (event, webhook) from the relay as before; a replay adds another only when no
 *   replay of that event to that webhook is still pending.
 */
export class EventFeed1764320000000 implements MigrationInterface {
  name = 'EventFeed1764320000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE outbox_events ADD COLUMN feed_position bigint');
    await queryRunner.query('CREATE INDEX idx_outbox_feed ON outbox_events (account_id, feed_position)');
    await queryRunner.query('CREATE INDEX idx_outbox_feed_position ON outbox_events (feed_position)');
    await queryRunner.query('CREATE INDEX idx_outbox_account_occurred ON outbox_events (account_id, occurred_at)');
    await queryRunner.query('CREATE TABLE event_feed_sequence (id integer PRIMARY KEY, last_position bigint NOT NULL, trimmed_through bigint NOT NULL)');
    await queryRunner.query('INSERT INTO event_feed_sequence (id, last_position, trimmed_through) VALUES (1, 0, 0)');

    await queryRunner.query(`ALTER TABLE webhook_deliveries ADD COLUMN origin varchar(10) NOT NULL DEFAULT 'event'`);
    await queryRunner.query('DROP INDEX uq_webhook_deliveries_event');
    await queryRunner.query(`CREATE UNIQUE INDEX uq_webhook_deliveries_event ON webhook_deliveries (event_id, webhook_id) WHERE origin = 'event'`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX uq_webhook_deliveries_replay_pending ON webhook_deliveries (event_id, webhook_id) WHERE origin = 'replay' AND status = 'pending'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX uq_webhook_deliveries_replay_pending');
    await queryRunner.query(`DELETE FROM webhook_deliveries WHERE origin = 'replay'`);
    await queryRunner.query('DROP INDEX uq_webhook_deliveries_event');
    await queryRunner.query('CREATE UNIQUE INDEX uq_webhook_deliveries_event ON webhook_deliveries (event_id, webhook_id)');
    await queryRunner.query('ALTER TABLE webhook_deliveries DROP COLUMN origin');
    await queryRunner.query('DROP TABLE event_feed_sequence');
    await queryRunner.query('DROP INDEX idx_outbox_account_occurred');
    await queryRunner.query('DROP INDEX idx_outbox_feed_position');
    await queryRunner.query('DROP INDEX idx_outbox_feed');
    await queryRunner.query('ALTER TABLE outbox_events DROP COLUMN feed_position');
  }
}
