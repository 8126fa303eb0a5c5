import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ApiError } from '../../common/errors/api-error.js';
import { SealedBox } from '../../common/sealed-box.js';
import { AppConfig } from '../../config/app-config.js';

/**
 * Keeps webhook secrets encrypted at rest (AES-256-GCM, SealedBox). The key is derived from
 * SECRETS_ENCRYPTION_KEY, so a copy of the database alone does not reveal the secrets.
 */
@Injectable()
export class WebhookSecretBox extends SealedBox {
  constructor(config: AppConfig) {
    super(config.secretsEncryptionKey, 'webhook-secrets');
  }

  /** Whether a sealed secret opens under the current key (one sealed under an earlier SECRETS_ENCRYPTION_KEY does not). */
  opens(sealed: string): boolean {
    try {
      this.open(sealed);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The webhook's secret, for a request that signs with it now (test event, replay). One sealed under another
   * SECRETS_ENCRYPTION_KEY cannot sign: 409 saying so and how to mend it, rather than a 500 or a replay that sends nothing.
   */
  signingSecretOf(webhook: { id: string; secretSealed: string }): string {
    try {
      return this.open(webhook.secretSealed);
    } catch {
      throw new ApiError(
        409,
        'conflict',
        `The secret of webhook ${webhook.id} cannot be decrypted (was SECRETS_ENCRYPTION_KEY changed?), so nothing can be signed for it; rotate its secret (POST /v1/webhooks/${webhook.id}/rotate-secret) to give it a new one.`,
      );
    }
  }
}

/**
 * A fresh signing secret in the Standard Webhooks form: `whsec_` + standard base64 of 32 random bytes,
 * so the standard libraries take it as it is (see standardWebhooksKey).
 */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
