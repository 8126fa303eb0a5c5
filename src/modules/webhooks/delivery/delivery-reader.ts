import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';
import { WebhookEntity } from '../webhook.entity.js';

/** Where a delivery goes and the sealed secrets it is signed with, as they are now (a rotation changes them). */
export interface DeliveryWebhook {
  url: string;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
}

/** What an attempt needs of its delivery and of its webhook. */
export type DeliveryToAttempt = Pick<
  WebhookDeliveryEntity,
  'id' | 'webhookId' | 'eventId' | 'event' | 'body' | 'status' | 'series' | 'attempts' | 'attemptsBeforeSeries' | 'attemptLog' | 'nextAttemptAt'
> & { webhook: DeliveryWebhook };

interface WebhookColumns {
  d_id: string;
  w_url: string;
  w_secret_sealed: string;
  w_previous_secret_sealed: string | null;
  w_previous_secret_expires_at: string | null;
}

/**
 * Reads deliveries for the worker's jobs, each with its webhook's url and secrets: the jobs that start in
 * the same turn of the event loop share one query, instead of one query each. The secrets are read with
 * every attempt, never cached, so a rotation made by any server process applies to the next attempt.
 * A delivery whose webhook is gone reads as null.
 */
@Injectable()
export class DeliveryReader {
  private wanted = new Map<string, Array<{ resolve: (d: DeliveryToAttempt | null) => void; reject: (e: unknown) => void }>>();

  constructor(@InjectRepository(WebhookDeliveryEntity) private readonly deliveries: Repository<WebhookDeliveryEntity>) {}

  read(id: string): Promise<DeliveryToAttempt | null> {
    return new Promise((resolve, reject) => {
      if (this.wanted.size === 0) setImmediate(() => void this.readWanted());
      const waiters = this.wanted.get(id) ?? [];
      waiters.push({ resolve, reject });
      this.wanted.set(id, waiters);
    });
  }

  private async readWanted(): Promise<void> {
    const wanted = this.wanted;
    this.wanted = new Map();
    try {
      const { entities, raw } = await this.deliveries
        .createQueryBuilder('d')
        .innerJoin(WebhookEntity, 'w', 'w.id = d.webhook_id')
        .select(['d.id', 'd.webhookId', 'd.eventId', 'd.event', 'd.body', 'd.status', 'd.series', 'd.attempts', 'd.attemptsBeforeSeries', 'd.attemptLog', 'd.nextAttemptAt'])
        .addSelect(['w.url', 'w.secretSealed', 'w.previousSecretSealed', 'w.previousSecretExpiresAt'])
        .where('d.id IN (:...ids)', { ids: [...wanted.keys()] })
        .getRawAndEntities<WebhookColumns>();
      const webhookOf = new Map(
        raw.map((row) => [
          row.d_id,
          {
            url: row.w_url,
            secretSealed: row.w_secret_sealed,
            previousSecretSealed: row.w_previous_secret_sealed,
            previousSecretExpiresAt: row.w_previous_secret_expires_at === null ? null : new Date(row.w_previous_secret_expires_at),
          },
        ]),
      );
      const byId = new Map<string, DeliveryToAttempt>();
      for (const delivery of entities) {
        const webhook = webhookOf.get(delivery.id);
        if (webhook) byId.set(delivery.id, { ...delivery, webhook });
      }
      for (const [id, waiters] of wanted) for (const w of waiters) w.resolve(byId.get(id) ?? null);
    } catch (error) {
      for (const waiters of wanted.values()) for (const w of waiters) w.reject(error);
    }
  }
}
