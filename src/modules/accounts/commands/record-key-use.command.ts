import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Transactions } from '../../../infra/database/transactions.js';
import { ApiKeyEntity } from '../api-key.entity.js';

/** Notes when a key was last used, so owners can spot and revoke idle keys. */
export class RecordKeyUseCommand extends Command<void> {
  constructor(
    readonly keyId: string,
    readonly at: Date,
  ) {
    super();
  }
}

@CommandHandler(RecordKeyUseCommand)
export class RecordKeyUseHandler implements ICommandHandler<RecordKeyUseCommand> {
  constructor(private readonly transactions: Transactions) {}

  async execute({ keyId, at }: RecordKeyUseCommand): Promise<void> {
    await this.transactions.run((tx) => tx.getRepository(ApiKeyEntity).update({ id: keyId }, { lastUsedAt: at }));
  }
}
