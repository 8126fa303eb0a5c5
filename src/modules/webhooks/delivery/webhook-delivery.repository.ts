import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { entityJsonColumns, type SqlParameters } from '../../../infra/database/sql-dialect.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';

/** The columns a new delivery is inserted with (the others keep their defaults). */
const NEW_DELIVERY_COLUMNS = [
  'id',
  'webhookId',
  'accountId',
  'eventId',
  'event',
  'origin',
  'body',
  'status',
  'attempts',
  'series',
  'createdAt',
  'nextAttemptAt',
  'attemptLog',
  'queuedAt',
] as const satisfies Array<keyof WebhookDeliveryEntity>;

/** The columns a finished attempt changes. */
const ATTEMPT_COLUMNS = [
  'id',
  'series',
  'status',
  'attempts',
  'lastAttemptAt',
  'nextAttemptAt',
  'responseStatus',
  'error',
  'attemptLog',
] as const satisfies Array<keyof WebhookDeliveryEntity>;

/** A delivery row as a finished attempt leaves it, and the attempt count it must still have. */
export type AttemptChange = Pick<WebhookDeliveryEntity, (typeof ATTEMPT_COLUMNS)[number]> & { previousAttempts: number };

/**
 * The batch statements on webhook_deliveries: each one statement, whatever the batch size, with the
 * batch as one JSON parameter whose columns come from the entity.
 */
@Injectable()
export class WebhookDeliveryRepository {
  constructor(private readonly transactions: Transactions) {}

  /**
   * Inserts new deliveries; one whose (event, webhook) already has its delivery (or, for a replay, a pending
   * replay) is skipped. Answers the ids of those inserted.
   */
  async insertNew(tx: EntityManager, deliveries: Array<Partial<WebhookDeliveryEntity>>): Promise<Set<string>> {
    if (deliveries.length === 0) return new Set();
    const dialect = this.transactions.dialect;
    const columns = entityJsonColumns(tx, WebhookDeliveryEntity, [...NEW_DELIVERY_COLUMNS]);
    const params = dialect.parameters();
    const rows = params.add(JSON.stringify(deliveries.map(columns.row)));
    const inserted: Array<{ id: string }> = await tx.query(`${dialect.insertJsonRowsIgnoringConflicts('webhook_deliveries', rows, columns.types)} RETURNING id`, params.values);
    return new Set(inserted.map((row) => row.id));
  }

  /**
   * PostgreSQL: the INSERT of insertNew as a statement to put in a WITH clause (RETURNING left to the caller),
   * taking only the rows `where` (over `v`) holds; its parameters are added to `params`.
   */
  insertNewStatement(manager: EntityManager, deliveries: Array<Partial<WebhookDeliveryEntity>>, params: SqlParameters, where: string): string {
    const columns = entityJsonColumns(manager, WebhookDeliveryEntity, [...NEW_DELIVERY_COLUMNS]);
    const rows = params.add(JSON.stringify(deliveries.map(columns.row)));
    const names = Object.keys(columns.types);
    return `INSERT INTO webhook_deliveries (${names.join(', ')})
      SELECT ${names.map((name) => `v.${name}`).join(', ')} FROM ${this.transactions.dialect.jsonRows(rows, columns.types)} WHERE ${where} ON CONFLICT DO NOTHING`;
  }

  /**
   * How many replay deliveries of this webhook are still pending, counted up to `limit`. Read from the partial index
   * of pending replays (of every webhook), so it stays small while replays keep pace with their deliveries.
   */
  async pendingReplays(webhookId: string, limit: number): Promise<number> {
    const params = this.transactions.dialect.parameters();
    const rows: Array<{ count: number | string }> = await this.transactions.dataSource.query(
      `SELECT COUNT(*) AS count FROM (SELECT 1 FROM webhook_deliveries WHERE origin = 'replay' AND status = 'pending' AND webhook_id = ${params.add(webhookId)} LIMIT ${limit}) pending`,
      params.values,
    );
    return Number(rows[0]?.count ?? 0);
  }

  /** The oldest deliveries whose current series has no queue job yet. */
  unqueued(limit: number): Promise<Array<{ id: string; series: number; attempts: number }>> {
    // In order by idx_webhook_deliveries_unqueued; the status index would read and sort every pending delivery.
    return this.transactions.dataSource.query(
      `SELECT id, series, attempts FROM webhook_deliveries WHERE queued_at IS NULL AND ${this.transactions.dialect.notIndexed('status')} = 'pending' ORDER BY created_at, id LIMIT ${limit}`,
    );
  }

  /** Marks these series as queued; a delivery redelivered meanwhile (another series) waits for its own job. */
  async markQueued(deliveries: Array<{ id: string; series: number }>, queuedAt: Date): Promise<void> {
    const dialect = this.transactions.dialect;
    // Ahead of waiting requests: the dispatcher's next pass waits for this short write.
    await this.transactions.runFirst((tx) => {
      const columns = entityJsonColumns(tx, WebhookDeliveryEntity, ['id', 'series', 'queuedAt']);
      const params = dialect.parameters();
      const rows = params.add(JSON.stringify(deliveries.map((d) => columns.row({ id: d.id, series: Number(d.series), queuedAt }))));
      return tx.query(
        `UPDATE webhook_deliveries SET queued_at = v.queued_at FROM ${dialect.jsonRows(rows, columns.types)}
         WHERE webhook_deliveries.id = v.id AND webhook_deliveries.series = v.series AND ${dialect.notIndexed('webhook_deliveries.queued_at')} IS NULL`,
        params.values,
      );
    });
  }

  /** Marks these series as not queued, so the sweep queues them (their job could not be added). */
  async markUnqueued(deliveries: Array<{ id: string; series: number }>): Promise<void> {
    const dialect = this.transactions.dialect;
    await this.transactions.runFirst((tx) => {
      const columns = entityJsonColumns(tx, WebhookDeliveryEntity, ['id', 'series']);
      const params = dialect.parameters();
      const rows = params.add(JSON.stringify(deliveries.map((d) => columns.row({ id: d.id, series: Number(d.series) }))));
      return tx.query(
        `UPDATE webhook_deliveries SET queued_at = NULL FROM ${dialect.jsonRows(rows, columns.types)}
         WHERE webhook_deliveries.id = v.id AND webhook_deliveries.series = v.series`,
        params.values,
      );
    });
  }

  /** Marks pending deliveries due before `cutoff` as not queued, so their jobs are added again. */
  async markStaleUnqueued(cutoff: Date): Promise<number> {
    const result = await this.transactions.run((tx) =>
      tx
        .createQueryBuilder()
        .update(WebhookDeliveryEntity)
        .set({ queuedAt: null })
        .where("status = 'pending' AND next_attempt_at < :cutoff AND queued_at IS NOT NULL", { cutoff: cutoff.toISOString() })
        .execute(),
    );
    return result.affected ?? 0;
  }

  /**
   * The UPDATE (without RETURNING) of a batch of finished attempts, and its parameters. Conditional on the
   * attempt count read before each attempt, so two workers finishing the same attempt cannot both log it.
   */
  attemptsUpdate(manager: EntityManager, changes: AttemptChange[]): { sql: string; parameters: unknown[] } {
    const dialect = this.transactions.dialect;
    const columns = entityJsonColumns(manager, WebhookDeliveryEntity, [...ATTEMPT_COLUMNS]);
    const params = dialect.parameters();
    const rows = params.add(JSON.stringify(changes.map((change) => ({ ...columns.row(change), prev_attempts: change.previousAttempts }))));
    const set = Object.keys(columns.types)
      .filter((name) => name !== 'id' && name !== 'series')
      .map((name) => `${name} = v.${name}`)
      .join(', ');
    // The row is looked up by id; the status index must not be walked for each row of the batch.
    const matches = `webhook_deliveries.id = v.id AND webhook_deliveries.series = v.series
      AND webhook_deliveries.attempts = v.prev_attempts AND ${dialect.notIndexed('webhook_deliveries.status')} = 'pending'`;
    const sql = `UPDATE webhook_deliveries SET ${set} FROM ${dialect.jsonRows(rows, { ...columns.types, prev_attempts: 'integer' })} WHERE ${matches}`;
    return { sql, parameters: params.values };
  }
}
