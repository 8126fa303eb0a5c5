import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { IsNull } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { RevokedShareResponse } from '../dto/share.response.js';
import { ShareEntity } from '../share.entity.js';
import { ID_SHAPE } from '../share-token.js';

/**
 * Revokes a link of the caller's account: it answers 404 from now on. Like every DELETE of the API, a
 * second call finds nothing left to revoke and answers 404.
 */
export class RevokeShareCommand extends Command<RevokedShareResponse> {
  constructor(
    readonly actor: Actor,
    readonly shareId: string,
  ) {
    super();
  }
}

@CommandHandler(RevokeShareCommand)
export class RevokeShareHandler implements ICommandHandler<RevokeShareCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, shareId }: RevokeShareCommand): Promise<RevokedShareResponse> {
    if (!ID_SHAPE.test(shareId)) throw new NotFound('Share link');
    const now = this.clock.now();
    return this.transactions.run(async (tx) => {
      const result = await tx.getRepository(ShareEntity).update({ id: shareId, accountId: actor.accountId, revokedAt: IsNull() }, { revokedAt: now });
      if (!result.affected) throw new NotFound('share', shareId);
      return Object.assign(new RevokedShareResponse(), { id: shareId, revoked: true, revoked_at: now.toISOString() });
    });
  }
}
