import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { IsNull } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { ApiKeyCache } from '../api-key-cache.js';
import { ApiKeyEntity } from '../api-key.entity.js';
import { RevokedApiKeyResponse } from '../dto/api-key.response.js';
import { assertKeyWithinPowers } from '../key-authority.js';

/**
 * Revokes a key of the caller's account, if no stronger than the caller's; it stops authenticating at once,
 * in every server process (ApiKeyCache).
 */
export class RevokeApiKeyCommand extends Command<RevokedApiKeyResponse> {
  constructor(
    readonly actor: Actor,
    readonly keyId: string,
  ) {
    super();
  }
}

@CommandHandler(RevokeApiKeyCommand)
export class RevokeApiKeyHandler implements ICommandHandler<RevokeApiKeyCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly cache: ApiKeyCache,
  ) {}

  async execute({ actor, keyId }: RevokeApiKeyCommand): Promise<RevokedApiKeyResponse> {
    const now = this.clock.now();
    const revoked = await this.transactions.run(async (tx) => {
      const keys = tx.getRepository(ApiKeyEntity);
      const live = { id: keyId, accountId: actor.accountId, revokedAt: IsNull() };
      const key = await keys.findOneBy(live);
      if (!key) throw new NotFound('API key', keyId);
      assertKeyWithinPowers(actor, key, 'revoke');
      const result = await keys.update(live, { revokedAt: now });
      if (!result.affected) throw new NotFound('API key', keyId);
      return Object.assign(new RevokedApiKeyResponse(), { id: keyId, revoked: true, revoked_at: now.toISOString() });
    });
    await this.cache.invalidate({ keyId });
    return revoked;
  }
}
