import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { findUsableShare, type UsableShare } from '../share-lookup.js';

/**
 * A usable link by its token, without checking a password or counting an access: what the share
 * page needs to decide whether to ask for a password. Throws 404 or 410 like every public access.
 */
export class FindPublicShareQuery extends Query<UsableShare> {
  constructor(readonly token: string) {
    super();
  }
}

@QueryHandler(FindPublicShareQuery)
export class FindPublicShareHandler implements IQueryHandler<FindPublicShareQuery> {
  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
  ) {}

  execute({ token }: FindPublicShareQuery): Promise<UsableShare> {
    return findUsableShare(this.dataSource.manager, token, this.clock.now());
  }
}
