import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { IsNull } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { InvalidRequest, NotFound } from '../../../common/errors/api-error.js';
import { notKeptForRetries } from '../../../common/idempotency/not-kept-for-retries.js';
import { Clock } from '../../../common/clock.js';
import { newId } from '../../../common/ids.js';
import { SCOPES, type Scope } from '../../../common/auth/scopes.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { AccountEntity } from '../account.entity.js';
import { ApiKeyEntity } from '../api-key.entity.js';
import { generateApiKey } from '../api-key-secret.js';
import { assertCallingKeyStillLive, assertKeyWithinPowers } from '../key-authority.js';
import { UserEntity } from '../user.entity.js';

/** Live (unrevoked) keys an account may hold: one page of GET /v1/api-keys. */
export const MAX_LIVE_API_KEYS_PER_ACCOUNT = 100;

/**
 * A key just issued, with its secret (shown once). The controller answers it as CreatedApiKeyResponse; the handler
 * does not map it itself because the response's OpenAPI decorators cost the command line 200 ms to load.
 */
export interface IssuedApiKey {
  key: ApiKeyEntity;
  secret: string;
}

/**
 * Issues a new API key for a user of the account (the account's first user when none is named).
 * `issuer` is the key asking for it over the API; null for the operator (command line).
 */
export class CreateApiKeyCommand extends Command<IssuedApiKey> {
  constructor(
    readonly accountId: string,
    readonly userId: string | null,
    readonly name: string,
    readonly scopes: Scope[],
    readonly elevated: boolean,
    readonly issuer: Actor | null = null,
  ) {
    super();
  }
}

@CommandHandler(CreateApiKeyCommand)
export class CreateApiKeyHandler implements ICommandHandler<CreateApiKeyCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
  ) {}

  async execute({ accountId, userId, name, scopes, elevated, issuer }: CreateApiKeyCommand): Promise<IssuedApiKey> {
    if (issuer) assertKeyWithinPowers(issuer, { scopes, elevated }, 'create');
    const secret = generateApiKey();
    return this.transactions.run(async (tx) => {
      // The account row lock makes the count-then-insert below safe against a concurrent creation.
      const account = await tx.getRepository(AccountEntity).findOne({ where: { id: accountId }, ...this.transactions.dialect.lockForUpdate<AccountEntity>() });
      if (!account) throw new NotFound('account', accountId);
      if (issuer) await assertCallingKeyStillLive(tx, issuer);
      // The operator (command line) is not held to it: an account full of keys without an elevated one can still be given one.
      if (issuer && (await tx.getRepository(ApiKeyEntity).countBy({ accountId, revokedAt: IsNull() })) >= MAX_LIVE_API_KEYS_PER_ACCOUNT) {
        // Holds only until a key is revoked: a retry with the same Idempotency-Key then creates.
        throw notKeptForRetries(
          new InvalidRequest(`An account may have at most ${MAX_LIVE_API_KEYS_PER_ACCOUNT} live API keys; revoke one first.`, {
            limit: MAX_LIVE_API_KEYS_PER_ACCOUNT,
          }),
        );
      }
      const user = userId
        ? await tx.getRepository(UserEntity).findOneBy({ id: userId, accountId })
        : await tx.getRepository(UserEntity).findOne({ where: { accountId }, order: { createdAt: 'ASC', id: 'ASC' } });
      if (!user) throw new NotFound('user', userId ?? undefined);
      const key = tx.getRepository(ApiKeyEntity).create({
        id: newId('key'),
        accountId,
        userId: user.id,
        name,
        keyHash: secret.hash,
        keyPrefix: secret.displayPrefix,
        // Stored in a fixed order so listings read the same whatever order they were given in.
        scopes: SCOPES.filter((s) => scopes.includes(s)),
        elevated,
        createdAt: this.clock.now(),
        lastUsedAt: null,
        revokedAt: null,
      });
      await tx.getRepository(ApiKeyEntity).insert(key);
      return { key, secret: secret.secret };
    });
  }
}
