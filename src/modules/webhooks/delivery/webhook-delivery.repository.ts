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
  'heldBy',
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
   * replay), or whose webhook has been deleted, is skipped. Answers the ids of those inserted.
   */
  async insertNew(tx: EntityManager, deliveries: Array<Partial<WebhookDeliveryEntity>>): Promise<Set<string>> {
    if (deliveries.length === 0) return new Set();
    const dialect = this.transactions.dialect;
    const columns = entityJsonColumns(tx, WebhookDeliveryEntity, [...NEW_DELIVERY_COLUMNS]);
    const params = dialect.parameters();
    const rows = params.add(JSON.stringify(deliveries.map(columns.row)));
    const inserted: Array<{ id: string }> = await tx.query(
      `${dialect.insertJsonRowsIgnoringConflicts('webhook_deliveries', rows, columns.types, this.ofExistingWebhooks(deliveries, params))} RETURNING id`,
      params.values,
    );
    return new Set(inserted.map((row) => row.id));
  }

  /**
   * Only deliveries to webhooks that exist when they are inserted, and then stay until the commit: a webhook whose DELETE
   * has answered gets none, and one deleted while its deliveries are inserted waits and takes them with it (ON DELETE
   * CASCADE). Nothing else is held up: its updates (active, secrets) go on, as do other webhooks' deliveries.
   */
  private ofExistingWebhooks(deliveries: Array<Partial<WebhookDeliveryEntity>>, params: SqlParameters): string {
    const webhookIds = params.add(JSON.stringify([...new Set(deliveries.map((delivery) => delivery.webhookId))]));
    return `v.webhook_id IN (${this.transactions.dialect.existingKeysHeld('webhooks', webhookIds)})`;
  }

  /**
   * PostgreSQL: the INSERT of insertNew as a statement to put in a WITH clause (RETURNING left to the caller),
   * taking only the rows `where` (over `v`) holds, of webhooks not deleted; its parameters are added to `params`.
   */
  insertNewStatement(manager: EntityManager, deliveries: Array<Partial<WebhookDeliveryEntity>>, params: SqlParameters, where: string): string {
    const columns = entityJsonColumns(manager, WebhookDeliveryEntity, [...NEW_DELIVERY_COLUMNS]);
    const rows = params.add(JSON.stringify(deliveries.map(columns.row)));
    return this.transactions.dialect.insertJsonRowsIgnoringConflicts('webhook_deliveries', rows, columns.types, `${where} AND ${this.ofExistingWebhooks(deliveries, params)}`);
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
  unqueued(limit: number): Promise<Array<{ id: string; series: number }>> {
    // In order by idx_webhook_deliveries_unqueued; the status index would read and sort every pending delivery.
    return this.transactions.dataSource.query(
      `SELECT id, series FROM webhook_deliveries WHERE queued_at IS NULL AND ${this.transactions.dialect.notIndexed('status')} = 'pending' ORDER BY created_at, id LIMIT ${limit}`,
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

  /**
   * Marks pending deliveries due before `cutoff` as not queued, so their jobs are added again. Not those a live
   * process holds for their first attempt (they may wait long for a slot): releaseHeldByDead covers those.
   */
  async markStaleUnqueued(cutoff: Date): Promise<number> {
    const result = await this.transactions.run((tx) =>
      tx
        .createQueryBuilder()
        .update(WebhookDeliveryEntity)
        .set({ queuedAt: null })
        .where("status = 'pending' AND next_attempt_at < :cutoff AND queued_at IS NOT NULL AND held_by IS NULL", { cutoff: cutoff.toISOString() })
        .execute(),
    );
    return result.affected ?? 0;
  }

  /** The pending deliveries held by `instanceId` for their first attempt since before `queuedBefore`. */
  heldBy(instanceId: string, queuedBefore: Date): Promise<Array<{ id: string; series: number }>> {
    const params = this.transactions.dialect.parameters();
    return this.transactions.dataSource.query(
      `SELECT id, series FROM webhook_deliveries WHERE held_by = ${params.add(instanceId)} AND ${this.transactions.dialect.notIndexed('status')} = 'pending'
         AND ${this.transactions.dialect.notIndexed('queued_at')} < ${params.add(queuedBefore.toISOString())}`,
      params.values,
    );
  }

  /**
   * Deliveries `instanceId` holds no more: unheld, and, unless their job was added (`queued`), marked not queued, so
   * the sweep queues them. Only rows still held by it (an attempt logged meanwhile has let go of its row already).
   */
  async release(instanceId: string, deliveries: Array<{ id: string }>, queued: boolean): Promise<void> {
    if (deliveries.length === 0) return;
    const dialect = this.transactions.dialect;
    await this.transactions.runFirst((tx) => {
      const params = dialect.parameters();
      const ids = params.add(JSON.stringify(deliveries.map((d) => d.id)));
      return tx.query(
        `UPDATE webhook_deliveries SET held_by = NULL${queued ? '' : ', queued_at = NULL'}
         WHERE id IN (SELECT value FROM ${dialect.jsonValues(ids)}) AND ${dialect.notIndexed('held_by')} = ${params.add(instanceId)}`,
        params.values,
      );
    });
  }

  /**
   * Takes back the deliveries held for a first attempt by processes that are dead (no heartbeat since `deadBefore`,
   * or stopped), and held since before then, so a process just starting (its heartbeat not yet written) keeps its
   * own: unheld and not queued, for the sweep. Answers how many.
   */
  async releaseHeldByDead(deadBefore: Date): Promise<number> {
    const result = await this.transactions.run((tx) =>
      tx
        .createQueryBuilder()
        .update(WebhookDeliveryEntity)
        .set({ heldBy: null, queuedAt: null })
        .where('held_by IS NOT NULL AND queued_at < :cutoff AND held_by NOT IN (SELECT id FROM server_instances WHERE heartbeat_at >= :cutoff)', {
          cutoff: deadBefore.toISOString(),
        })
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
    // A logged attempt lets go of the row its process held for it (FirstAttempts).
    const set = [
      ...Object.keys(columns.types)
        .filter((name) => name !== 'id' && name !== 'series')
        .map((name) => `${name} = v.${name}`),
      'held_by = NULL',
    ].join(', ');
    // The row is looked up by id; the status index must not be walked for each row of the batch.
    const matches = `webhook_deliveries.id = v.id AND webhook_deliveries.series = v.series
      AND webhook_deliveries.attempts = v.prev_attempts AND ${dialect.notIndexed('webhook_deliveries.status')} = 'pending'`;
    const sql = `UPDATE webhook_deliveries SET ${set} FROM ${dialect.jsonRows(rows, { ...columns.types, prev_attempts: 'integer' })} WHERE ${matches}`;
    return { sql, parameters: params.values };
  }
}
