import { Injectable, Logger } from '@nestjs/common';
import { WebhookSecretBox } from '../webhook-secret-box.js';
import { previousSecretSigns, type WebhookEntity } from '../webhook.entity.js';
import type { DeliveryWebhook } from './delivery-reader.js';

/** Opened secrets remembered at most; a cleared cache only costs decrypting again. */
const MAX_CACHED = 10_000;

/**
 * Opens webhook secrets for signing. A secret sealed under another SECRETS_ENCRYPTION_KEY cannot sign:
 * it is logged and its webhook's events fail or are skipped, rather than stalling every event.
 */
@Injectable()
export class DeliveryTargets {
  private readonly logger = new Logger('WebhookDelivery');
  /** Opened secret per sealed value: a sealed value never changes meaning, so an entry never goes stale. */
  private readonly opened = new Map<string, string>();

  constructor(private readonly secrets: WebhookSecretBox) {}

  /** The webhook's current secret, or null (logged) when it cannot be decrypted. */
  secretOf(webhook: Pick<WebhookEntity, 'id' | 'secretSealed'>): string | null {
    return this.open(webhook.id, webhook.secretSealed);
  }

  /**
   * The secrets an attempt made at `now` is signed with, newest first: the current one, and during a
   * rotation's grace period the previous one too. Null when the current secret cannot be decrypted.
   */
  signingSecrets(webhookId: string, webhook: DeliveryWebhook, now: Date): string[] | null {
    const current = this.open(webhookId, webhook.secretSealed);
    if (current === null) return null;
    if (!previousSecretSigns(webhook.previousSecretSealed, webhook.previousSecretExpiresAt, now)) return [current];
    const previous = this.open(webhookId, webhook.previousSecretSealed as string);
    return previous === null ? [current] : [current, previous];
  }

  private open(webhookId: string, sealed: string): string | null {
    const known = this.opened.get(sealed);
    if (known !== undefined) return known;
    try {
      const secret = this.secrets.open(sealed);
      if (this.opened.size >= MAX_CACHED) this.opened.clear();
      this.opened.set(sealed, secret);
      return secret;
    } catch (error) {
      // Not remembered: each attempt tries (and logs) again.
      this.logger.error({ err: error, webhookId }, 'Webhook secret cannot be decrypted (was SECRETS_ENCRYPTION_KEY changed?); its events are not delivered');
      return null;
    }
  }
}
