import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { RotatedWebhookSecretResponse } from '../dto/webhook.response.js';
import { DEFAULT_SECRET_GRACE_SECONDS, type RotateWebhookSecretRequest } from '../dto/rotate-webhook-secret.request.js';
import { generateWebhookSecret, WebhookSecretBox } from '../webhook-secret-box.js';
import { WebhookEntity } from '../webhook.entity.js';

/**
 * Gives a webhook a new generated secret, shown in this answer only. The secret it replaces keeps signing
 * beside the new one for the grace period, so receivers can switch without refusing a delivery.
 */
export class RotateWebhookSecretCommand extends Command<RotatedWebhookSecretResponse> {
  constructor(
    readonly actor: Actor,
    readonly webhookId: string,
    readonly request: RotateWebhookSecretRequest,
  ) {
    super();
  }
}

@CommandHandler(RotateWebhookSecretCommand)
export class RotateWebhookSecretHandler implements ICommandHandler<RotateWebhookSecretCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly secrets: WebhookSecretBox,
  ) {}

  async execute({ actor, webhookId, request }: RotateWebhookSecretCommand): Promise<RotatedWebhookSecretResponse> {
    const secret = generateWebhookSecret();
    return this.transactions.run(async (tx) => {
      const repository = tx.getRepository(WebhookEntity);
      // Locked, so two rotations at once cannot both keep the same secret as "previous".
      const webhook = await repository.findOne({ where: { id: webhookId, accountId: actor.accountId }, ...this.transactions.dialect.lockForUpdate<WebhookEntity>() });
      if (!webhook) throw new NotFound('webhook', webhookId);
      const now = this.clock.now();
      // A secret that cannot be decrypted any more cannot sign beside the new one: no grace period for it.
      const grace = this.secrets.opens(webhook.secretSealed) ? (request.expires_in ?? DEFAULT_SECRET_GRACE_SECONDS) : 0;
      webhook.rotateSecret(this.secrets.seal(secret), now, grace);
      await repository.save(webhook);
      return RotatedWebhookSecretResponse.of(webhook, secret, now);
    });
  }
}
