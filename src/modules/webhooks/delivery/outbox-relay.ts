import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { WebhookEntity } from '../webhook.entity.js';
import { DeliveryTargets } from './delivery-targets.js';
import { newDelivery } from './new-delivery.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';

interface OutboxRow {
  id: string;
  account_id: string;
  event: string;
  payload: string;
  occurred_at: string;
}

/**
 * Turns pending outbox rows into one delivery row per subscribed active webhook and marks the outbox
 * rows relayed, in one transaction. Rows are claimed (SKIP LOCKED on PostgreSQL) and (event, webhook)
 * is unique, so two server processes never create a delivery twice.
 */
@Injectable()
export class OutboxRelay {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly targets: DeliveryTargets,
    private readonly deliveries: WebhookDeliveryRepository,
  ) {}

  /** Relays up to `batch` outbox rows; answers how many it relayed. */
  relay(batch: number): Promise<number> {
    const dialect = this.transactions.dialect;
    return this.transactions.run(async (tx) => {
      const events: OutboxRow[] = await tx.query(
        `SELECT id, account_id, event, payload, occurred_at FROM outbox_events WHERE relayed_at IS NULL
         ORDER BY occurred_at, id LIMIT ${batch}${dialect.claimRows}`,
      );
      if (events.length === 0) return 0;

      const accountIds = [...new Set(events.map((e) => e.account_id))];
      const webhooks = await tx.getRepository(WebhookEntity).findBy({ accountId: In(accountIds), active: true });
      const secrets = new Map<string, string | null>();
      const secretOf = (webhook: WebhookEntity): string | null => {
        if (!secrets.has(webhook.id)) secrets.set(webhook.id, this.targets.secretOf(webhook));
        return secrets.get(webhook.id) ?? null;
      };
      const now = this.clock.now();
      const deliveries = events.flatMap((event) => {
        const data = JSON.parse(event.payload) as unknown;
        return webhooks
          .filter((webhook) => webhook.accountId === event.account_id && webhook.subscribesTo(event.event))
          .flatMap((webhook) => {
            const secret = secretOf(webhook);
            if (secret === null) return [];
            return [newDelivery(webhook, secret, { id: event.id, name: event.event, occurredAt: new Date(event.occurred_at), data }, now)];
          });
      });
      await this.deliveries.insertNew(tx, deliveries);
      const params = dialect.parameters();
      // Each outbox row of the batch is found by its primary key, not by walking every unrelayed row.
      await tx.query(
        `UPDATE outbox_events SET relayed_at = ${params.add(now.toISOString())}
         WHERE id IN (SELECT value FROM ${dialect.jsonValues(params.add(JSON.stringify(events.map((e) => e.id))))}) AND ${dialect.notIndexed('relayed_at')} IS NULL`,
        params.values,
      );
      return events.length;
    });
  }
}
