import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { PasswordAttempts } from '../password-attempts.js';
import { findUsableShare, type UsableShare } from '../share-lookup.js';

/**
 * A usable link by its token, without checking a password or counting an access: what the share
 * page needs to decide whether to ask for a password. Throws 404 or 410 like every public access and,
 * for a password-protected link, the 429 a password from `visitorIp` would get now (the visitor locked
 * out, or the link backing off), so the page can say when to come back instead of showing a form that
 * cannot work.
 */
export class FindPublicShareQuery extends Query<UsableShare> {
  constructor(
    readonly token: string,
    readonly visitorIp: string,
  ) {
    super();
  }
}

@QueryHandler(FindPublicShareQuery)
export class FindPublicShareHandler implements IQueryHandler<FindPublicShareQuery> {
  constructor(
    private readonly dataSource: DataSource,
    private readonly attempts: PasswordAttempts,
    private readonly clock: Clock,
  ) {}

  async execute({ token, visitorIp }: FindPublicShareQuery): Promise<UsableShare> {
    const usable = await findUsableShare(this.dataSource.manager, token, this.clock.now());
    if (usable.share.passwordHash !== null) await this.attempts.assertMayTry(usable.share.id, visitorIp);
    return usable;
  }
}
