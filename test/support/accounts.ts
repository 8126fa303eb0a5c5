import type { INestApplicationContext } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import type { Scope } from '../../src/common/auth/scopes.js';
import { CreateAccountCommand } from '../../src/modules/accounts/commands/create-account.command.js';
import { CreateApiKeyCommand } from '../../src/modules/accounts/commands/create-api-key.command.js';
import { ApiKeyEntity } from '../../src/modules/accounts/api-key.entity.js';
import type { PlanName } from '../../src/modules/accounts/plans.js';

export interface TestAccount {
  accountId: string;
  userId: string;
  /** The owner key: every scope, elevated. */
  apiKey: string;
  /** The owner key's id (`key_…`). */
  keyId: string;
  auth: { Authorization: string };
}

/** An account with its owner key. Enterprise by default, so ordinary tests never meet the rate limit. */
export async function createAccount(
  app: INestApplicationContext,
  options: { plan?: PlanName; storageLimit?: number; name?: string } = {},
): Promise<TestAccount> {
  const created = await app
    .get(CommandBus)
    .execute(new CreateAccountCommand(options.name ?? 'Test account', options.plan ?? 'enterprise', options.storageLimit ?? null));
  const ownerKey = await app.get(DataSource).getRepository(ApiKeyEntity).findOneByOrFail({ accountId: created.account_id });
  return { accountId: created.account_id, userId: created.user_id, apiKey: created.api_key, keyId: ownerKey.id, auth: bearer(created.api_key) };
}

/** A further key of the account with exactly these scopes. */
export async function createKey(app: INestApplicationContext, account: TestAccount, scopes: Scope[], elevated = false) {
  const { key, secret } = await app.get(CommandBus).execute(new CreateApiKeyCommand(account.accountId, account.userId, 'test key', scopes, elevated));
  return { id: key.id, apiKey: secret, auth: bearer(secret) };
}

export function bearer(apiKey: string): { Authorization: string } {
  return { Authorization: `Bearer ${apiKey}` };
}
