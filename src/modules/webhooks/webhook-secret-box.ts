import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';

const VERSION = 'v1';

/**
 * Keeps webhook secrets encrypted at rest with AES-256-GCM. The key is derived from
 * SECRETS_ENCRYPTION_KEY, so a copy of the database alone does not reveal the secrets.
 */
@Injectable()
export class WebhookSecretBox {
  private readonly key: Buffer;

  constructor(config: AppConfig) {
    this.key = deriveKey(config.secretsEncryptionKey);
  }

  seal(secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
  }

  open(sealed: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw new Error('Unrecognised sealed webhook secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }
}

export function deriveKey(material: string): Buffer {
  return Buffer.from(hkdfSync('sha256', material, 'file-storage-service', 'webhook-secrets', 32));
}

/**
 * A fresh signing secret in the Standard Webhooks form: `whsec_` + standard base64 of 32 random bytes,
 * so the standard libraries take it as it is (see standardWebhooksKey).
 */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
