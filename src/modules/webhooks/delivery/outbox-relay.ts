import { Injectable } from '@nestjs/common';
import { EventBus } from '@nestjs/cqrs';
import { In, type QueryRunner } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import type { SqlParameters } from '../../../infra/database/sql-dialect.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { OutboxRelayedEvent, type RelayedOutboxEvent } from '../../../infra/outbox/outbox-relayed.event.js';
import type { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookEntity } from '../webhook.entity.js';
import type { DeliveryToAttempt } from './delivery-reader.js';
import { DeliveryTargets } from './delivery-targets.js';
import { FirstAttempts } from './first-attempts.js';
import { newDelivery, readyToAttempt } from './new-delivery.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';

interface OutboxRow {
  id: string;
  account_id: string;
  event: string;
  payload: string;
  occurred_at: string;
}

/**
 * What one relay pass did: outbox rows relayed, and the deliveries it created, ready to attempt; those whose first
 * attempt this process makes (FirstAttempts) are marked. The others have no job yet.
 */
export interface RelayPass {
  relayed: number;
  deliveries: Array<DeliveryToAttempt & { firstAttemptHere: boolean }>;
}

const NOTHING: RelayPass = { relayed: 0, deliveries: [] };

/**
 * Turns pending outbox rows into one delivery row per subscribed active webhook and marks the outbox
 * rows relayed, on a connection of its own on PostgreSQL. Everything it reads (outbox rows, webhooks)
 * is read outside any transaction, so on SQLite it does not wait for the write turn; the writes are one
 * short transaction taken ahead of waiting requests (`runFirst`): claim the rows (an UPDATE answering the
 * ids it changed), then insert the deliveries of the claimed rows only. A row read but claimed meanwhile by
 * another process (or, on SQLite, read from a transaction still open that then rolled back) is thus never
 * delivered; (event, webhook) is unique as well, and only deliveries actually inserted are answered. A webhook
 * deleted since it was read gets none (WebhookDeliveryRepository: the insert takes only webhooks that still exist, and
 * holds them until its commit), rather than its foreign key failing the whole batch. After
 * the commit, OutboxRelayedEvent lets other modules act on the batch.
 */
@Injectable()
export class OutboxRelay {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly targets: DeliveryTargets,
    private readonly deliveries: WebhookDeliveryRepository,
    private readonly events: EventBus,
    private readonly firstAttempts: FirstAttempts,
  ) {}

  /** The relay's own connection (see Transactions.reserveConnection), taken at the first pass. */
  private connection: QueryRunner | null = null;

  /** Relays up to `batch` outbox rows. */
  async relay(batch: number): Promise<RelayPass> {
    const connection = (this.connection ??= this.transactions.reserveConnection());
    try {
      return await this.relayOn(connection, batch);
    } catch (error) {
      // A broken connection is not used again: the next pass takes a fresh one.
      await this.close().catch(() => undefined);
      throw error;
    }
  }

  private async relayOn(connection: QueryRunner, batch: number): Promise<RelayPass> {
    const events: OutboxRow[] = await connection.query(
      `SELECT id, account_id, event, payload, occurred_at FROM outbox_events WHERE relayed_at IS NULL ORDER BY occurred_at, id LIMIT ${batch}`,
    );
    if (events.length === 0) return NOTHING;

    const accountIds = [...new Set(events.map((e) => e.account_id))];
    const webhooks = await connection.manager.getRepository(WebhookEntity).findBy({ accountId: In(accountIds), active: true });
    const secrets = new Map<string, string | null>();
    const secretOf = (webhook: WebhookEntity): string | null => {
      if (!secrets.has(webhook.id)) secrets.set(webhook.id, this.targets.secretOf(webhook));
      return secrets.get(webhook.id) ?? null;
    };
    const now = this.clock.now();
    const parsed = events.map((event) => ({ row: event, data: JSON.parse(event.payload) as Record<string, unknown> }));
    const candidates = parsed.flatMap(({ row, data }) =>
      webhooks
        .filter((webhook) => webhook.accountId === row.account_id && webhook.subscribesTo(row.event))
        .flatMap((webhook) => {
          const secret = secretOf(webhook);
          if (secret === null) return [];
          return [readyToAttempt(newDelivery(webhook, secret, { id: row.id, name: row.event, occurredAt: new Date(row.occurred_at), data }, now), webhook)];
        }),
    );

    const { rows, taken: firstAttempts } = this.firstAttempts.hold(candidates, now);
    const claimed = await this.claimAndInsert(connection, events.map((e) => e.id), rows, now).then(({ ids, inserted }) => ({
      ids,
      created: candidates.filter((delivery) => inserted.has(delivery.id)),
    }));
    if (claimed.ids.size === 0) return NOTHING;

    const relayed: RelayedOutboxEvent[] = parsed
      .filter(({ row }) => claimed.ids.has(row.id))
      .map(({ row, data }) => ({ id: row.id, name: row.event, accountId: row.account_id, data }));
    this.events.publish(new OutboxRelayedEvent(relayed));
    return {
      relayed: claimed.ids.size,
      deliveries: claimed.created.map((delivery) => ({ ...delivery, firstAttemptHere: firstAttempts.has(delivery.id) })),
    };
  }

  /** Gives the relay's connection back; called once the relay loop has stopped. */
  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = null;
    await connection?.release();
  }

  /**
   * Marks these outbox rows relayed, each found by its primary key, and inserts the deliveries of the rows
   * this call claimed; answers the ids of both. On PostgreSQL one statement (the claim and the insert as
   * WITH clauses, atomic by themselves), so one round trip instead of four; on SQLite one short
   * transaction, taken ahead of waiting requests.
   */
  private async claimAndInsert(
    connection: QueryRunner,
    eventIds: string[],
    deliveries: Array<Partial<WebhookDeliveryEntity> & { eventId: string }>,
    now: Date,
  ): Promise<{ ids: Set<string>; inserted: Set<string> }> {
    const dialect = this.transactions.dialect;
    if (dialect.writableCte) {
      const params = dialect.parameters();
      const claim = this.claimStatement(eventIds, now, params);
      const insert = this.deliveries.insertNewStatement(connection.manager, deliveries, params, 'v.event_id IN (SELECT id FROM claimed)');
      const rows: Array<{ kind: string; id: string }> = await connection.query(
        `WITH claimed AS (${claim}), inserted AS (${insert} RETURNING id)
         SELECT 'event' AS kind, id FROM claimed UNION ALL SELECT 'delivery' AS kind, id FROM inserted`,
        params.values,
      );
      const idsOf = (kind: string) => new Set(rows.filter((row) => row.kind === kind).map((row) => row.id));
      return { ids: idsOf('event'), inserted: idsOf('delivery') };
    }
    return this.transactions.runFirst(async (tx) => {
      const params = dialect.parameters();
      // A structured result, because the drivers shape a plain UPDATE ... RETURNING answer differently.
      const result = await tx.queryRunner!.query(this.claimStatement(eventIds, now, params), params.values, true);
      const ids = new Set((result.records as Array<{ id: string }>).map((r) => r.id));
      const inserted = await this.deliveries.insertNew(tx, deliveries.filter((delivery) => ids.has(delivery.eventId)));
      return { ids, inserted };
    }, connection);
  }

  /** Marks these outbox rows relayed, each found by its primary key, answering the ids it changed. */
  private claimStatement(ids: string[], now: Date, params: SqlParameters): string {
    const dialect = this.transactions.dialect;
    return `UPDATE outbox_events SET relayed_at = ${params.add(now.toISOString())}
       WHERE id IN (SELECT value FROM ${dialect.jsonValues(params.add(JSON.stringify(ids)))}) AND ${dialect.notIndexed('relayed_at')} IS NULL
       RETURNING id`;
  }
}
