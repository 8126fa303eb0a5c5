import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig, DEVELOPMENT_SECRETS_ENCRYPTION_KEY } from '../../../config/app-config.js';

/** Warns at start-up when webhook secrets are sealed with the public development key. */
@Injectable()
export class DevelopmentKeyWarning implements OnApplicationBootstrap {
  private readonly logger = new Logger('DeliveryDispatcher');

  constructor(private readonly config: AppConfig) {}

  onApplicationBootstrap(): void {
    if (this.config.secretsEncryptionKey === DEVELOPMENT_SECRETS_ENCRYPTION_KEY && this.config.nodeEnv === 'development') {
      this.logger.warn('SECRETS_ENCRYPTION_KEY is not set: webhook secrets are encrypted with the public development key');
    }
  }
}
