import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
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
}

/**
 * A fresh signing secret in the Standard Webhooks form: `whsec_` + standard base64 of 32 random bytes,
 * so the standard libraries take it as it is (see standardWebhooksKey).
 */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
