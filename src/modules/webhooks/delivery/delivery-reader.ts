import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { WebhookDeliveryEntity } from '../webhook-delivery.entity.js';

/** What an attempt needs of its delivery. */
export type DeliveryToAttempt = Pick<WebhookDeliveryEntity, 'id' | 'webhookId' | 'event' | 'body' | 'status' | 'series' | 'attempts' | 'attemptLog'>;

/**
 * Reads deliveries for the worker's jobs: the jobs that start in the same turn of the event loop share
 * one query, instead of one query each.
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
      const found = await this.deliveries.find({
        select: { id: true, webhookId: true, event: true, body: true, status: true, series: true, attempts: true, attemptLog: true },
        where: { id: In([...wanted.keys()]) },
      });
      const byId = new Map(found.map((d) => [d.id, d]));
      for (const [id, waiters] of wanted) for (const w of waiters) w.resolve(byId.get(id) ?? null);
    } catch (error) {
      for (const waiters of wanted.values()) for (const w of waiters) w.reject(error);
    }
  }
}
