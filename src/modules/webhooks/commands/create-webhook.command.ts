import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { InvalidRequest } from '../../../common/errors/api-error.js';
import { notKeptForRetries } from '../../../common/idempotency/not-kept-for-retries.js';
import { newId } from '../../../common/ids.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { AccountEntity } from '../../accounts/account.entity.js';
import { assertCallingKeyStillLive } from '../../accounts/key-authority.js';
import { CreatedWebhookResponse } from '../dto/webhook.response.js';
import type { CreateWebhookRequest } from '../dto/create-webhook.request.js';
import { generateWebhookSecret, WebhookSecretBox } from '../webhook-secret-box.js';
import { checkWebhookUrl } from '../webhook-url-policy.js';
import { WebhookEntity } from '../webhook.entity.js';

export const MAX_WEBHOOKS_PER_ACCOUNT = 25;

/** Registers a webhook; the answer is the only place its secret is ever shown. */
export class CreateWebhookCommand extends Command<CreatedWebhookResponse> {
  constructor(
    readonly actor: Actor,
    readonly request: CreateWebhookRequest,
  ) {
    super();
  }
}

@CommandHandler(CreateWebhookCommand)
export class CreateWebhookHandler implements ICommandHandler<CreateWebhookCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly secrets: WebhookSecretBox,
  ) {}

  async execute({ actor, request }: CreateWebhookCommand): Promise<CreatedWebhookResponse> {
    // Resolving DNS takes time, so it happens before the transaction; delivery checks the address again anyway.
    const problem = await checkWebhookUrl(request.url, { allowPrivate: this.config.webhookAllowPrivateUrls });
    if (problem) throw InvalidRequest.fields([{ field: 'url', message: problem }]);
    const secret = request.secret ?? generateWebhookSecret();
    return this.transactions.run(async (tx) => {
      // The account row lock makes the count-then-insert below safe against a concurrent create.
      await tx.getRepository(AccountEntity).findOne({ where: { id: actor.accountId }, ...this.transactions.dialect.lockForUpdate<AccountEntity>() });
      // A webhook receives the account's events from now on: a key revoked while this request waited leaves none behind.
      await assertCallingKeyStillLive(tx, actor);
      const existing = await tx.getRepository(WebhookEntity).countBy({ accountId: actor.accountId });
      if (existing >= MAX_WEBHOOKS_PER_ACCOUNT) {
        // Holds only until one is deleted: a retry with the same Idempotency-Key must register then, not be replayed this.
        throw notKeptForRetries(
          new InvalidRequest(`An account may have at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks; delete one first.`, {
            limit: MAX_WEBHOOKS_PER_ACCOUNT,
          }),
        );
      }
      const now = this.clock.now();
      const webhook = tx.getRepository(WebhookEntity).create({
        id: newId('wh'),
        accountId: actor.accountId,
        url: request.url,
        events: request.events,
        secretSealed: this.secrets.seal(secret),
        previousSecretSealed: null,
        previousSecretExpiresAt: null,
        active: request.active ?? true,
        createdAt: now,
        updatedAt: now,
        failingSince: null,
        disabledReason: null,
        disabledAt: null,
      });
      await tx.getRepository(WebhookEntity).insert(webhook);
      return CreatedWebhookResponse.withSecret(webhook, secret);
    });
  }
}
