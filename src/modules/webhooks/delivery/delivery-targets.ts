import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { WebhookSecretBox } from '../webhook-secret-box.js';
import { WebhookEntity } from '../webhook.entity.js';

/** Where a webhook's deliveries go and the secret they are signed with; null when the secret cannot be opened. */
export interface DeliveryTarget {
  url: string;
  secret: string | null;
}

/** Cached targets at most; a cleared cache only costs a lookup. */
const MAX_CACHED = 10_000;

/**
 * Opens webhook secrets for delivery. A secret sealed under another SECRETS_ENCRYPTION_KEY cannot sign:
 * it is logged and its webhook's events fail or are skipped, rather than stalling every event.
 */
@Injectable()
export class DeliveryTargets {
  private readonly logger = new Logger('WebhookDelivery');
  /**
   * Url and opened secret per webhook. Neither can change after creation (PATCH takes only events and
   * active), and a deleted webhook takes its deliveries with it, so an entry never goes stale.
   */
  private readonly targets = new Map<string, DeliveryTarget>();

  constructor(
    private readonly secrets: WebhookSecretBox,
    @InjectRepository(WebhookEntity) private readonly webhooks: Repository<WebhookEntity>,
  ) {}

  /** The webhook's secret, or null (logged) when it cannot be decrypted. */
  secretOf(webhook: WebhookEntity): string | null {
    try {
      return this.secrets.open(webhook.secretSealed);
    } catch (error) {
      this.logger.error({ err: error, webhookId: webhook.id }, 'Webhook secret cannot be decrypted (was SECRETS_ENCRYPTION_KEY changed?); its events are not delivered');
      return null;
    }
  }

  /** The target of a webhook by id, null when the webhook is gone. */
  async of(webhookId: string): Promise<DeliveryTarget | null> {
    const known = this.targets.get(webhookId);
    if (known) return known;
    const webhook = await this.webhooks.findOneBy({ id: webhookId });
    if (!webhook) return null;
    if (this.targets.size >= MAX_CACHED) this.targets.clear();
    const target = { url: webhook.url, secret: this.secretOf(webhook) };
    // A secret that cannot be opened is not remembered: each attempt tries (and logs) again.
    if (target.secret !== null) this.targets.set(webhookId, target);
    return target;
  }
}
