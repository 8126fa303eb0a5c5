import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Clock } from '../../../common/clock.js';
import { newId } from '../../../common/ids.js';
import { SCOPES } from '../../../common/auth/scopes.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { AccountEntity } from '../account.entity.js';
import { ApiKeyEntity } from '../api-key.entity.js';
import { generateApiKey } from '../api-key-secret.js';
import type { PlanName } from '../plans.js';
import { UserEntity } from '../user.entity.js';

export interface CreatedAccount {
  account_id: string;
  user_id: string;
  api_key: string;
}

/** Creates an account with its owner and a first key holding every scope and elevated rights. */
export class CreateAccountCommand extends Command<CreatedAccount> {
  constructor(
    readonly name: string,
    readonly plan: PlanName,
    readonly storageLimit: number | null = null,
  ) {
    super();
  }
}

@CommandHandler(CreateAccountCommand)
export class CreateAccountHandler implements ICommandHandler<CreateAccountCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
  ) {}

  async execute({ name, plan, storageLimit }: CreateAccountCommand): Promise<CreatedAccount> {
    const now = this.clock.now();
    const key = generateApiKey();
    return this.transactions.run(async (tx) => {
      const account = tx.getRepository(AccountEntity).create({
        id: newId('acc'),
        name,
        plan,
        storageLimitOverride: storageLimit,
        storageUsed: 0,
        storageReserved: 0,
        storageWarningLevel: 0,
        createdAt: now,
      });
      const user = tx.getRepository(UserEntity).create({ id: newId('usr'), accountId: account.id, name, createdAt: now });
      await tx.getRepository(AccountEntity).insert(account);
      await tx.getRepository(UserEntity).insert(user);
      await tx.getRepository(ApiKeyEntity).insert({
        id: newId('key'),
        accountId: account.id,
        userId: user.id,
        name: 'Owner key',
        keyHash: key.hash,
        keyPrefix: key.displayPrefix,
        scopes: [...SCOPES],
        elevated: true,
        createdAt: now,
        lastUsedAt: null,
        revokedAt: null,
      });
      return { account_id: account.id, user_id: user.id, api_key: key.secret };
    });
  }
}
