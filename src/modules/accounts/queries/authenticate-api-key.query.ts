import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { AccountEntity } from '../account.entity.js';
import { ApiKeyEntity } from '../api-key.entity.js';
import { hashApiKey } from '../api-key-secret.js';

export interface Authentication {
  actor: Actor;
  lastUsedAt: Date | null;
}

/** Finds the live (unrevoked) key with this secret and the account it acts for; null when there is none. */
export class AuthenticateApiKeyQuery extends Query<Authentication | null> {
  constructor(readonly secret: string) {
    super();
  }
}

@QueryHandler(AuthenticateApiKeyQuery)
export class AuthenticateApiKeyHandler implements IQueryHandler<AuthenticateApiKeyQuery> {
  constructor(
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    @InjectRepository(AccountEntity) private readonly accounts: Repository<AccountEntity>,
  ) {}

  async execute({ secret }: AuthenticateApiKeyQuery): Promise<Authentication | null> {
    const key = await this.keys.findOneBy({ keyHash: hashApiKey(secret), revokedAt: IsNull() });
    if (!key) return null;
    const account = await this.accounts.findOneBy({ id: key.accountId });
    if (!account) return null;
    return {
      actor: { accountId: account.id, userId: key.userId, keyId: key.id, scopes: key.scopes, elevated: key.elevated, plan: account.plan },
      lastUsedAt: key.lastUsedAt,
    };
  }
}
