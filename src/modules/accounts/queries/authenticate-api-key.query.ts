import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import type { Scope } from '../../../common/auth/scopes.js';
import { sqlDialect } from '../../../infra/database/sql-dialect.js';
import type { PlanName } from '../plans.js';
import { ApiKeyCache } from '../api-key-cache.js';
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

interface KeyRow {
  id: string;
  user_id: string;
  /** TypeORM's simple-array: the scopes joined by commas. */
  scopes: string;
  /** 0/1 on SQLite, a boolean on PostgreSQL. */
  elevated: number | boolean;
  last_used_at: string | null;
  account_id: string;
  plan: PlanName;
}

/**
 * Runs on every authenticated request: answered from ApiKeyCache when it can be, else one plain join
 * instead of two entity lookups through the query builder.
 */
@QueryHandler(AuthenticateApiKeyQuery)
export class AuthenticateApiKeyHandler implements IQueryHandler<AuthenticateApiKeyQuery> {
  private readonly sql: string;

  constructor(
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    private readonly cache: ApiKeyCache,
  ) {
    const placeholder = sqlDialect(keys.manager).parameter(1);
    this.sql =
      'SELECT k.id, k.user_id, k.scopes, k.elevated, k.last_used_at, a.id AS account_id, a.plan ' +
      `FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = ${placeholder} AND k.revoked_at IS NULL`;
  }

  execute({ secret }: AuthenticateApiKeyQuery): Promise<Authentication | null> {
    const keyHash = hashApiKey(secret);
    return this.cache.lookup(keyHash, () => this.load(keyHash));
  }

  private async load(keyHash: string): Promise<Authentication | null> {
    const [key]: KeyRow[] = await this.keys.query(this.sql, [keyHash]);
    if (!key) return null;
    return {
      actor: {
        accountId: key.account_id,
        userId: key.user_id,
        keyId: key.id,
        scopes: (key.scopes ? key.scopes.split(',') : []) as Scope[],
        elevated: key.elevated === true || key.elevated === 1,
        plan: key.plan,
      },
      lastUsedAt: key.last_used_at === null ? null : new Date(key.last_used_at),
    };
  }
}
