import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { AppConfig } from '../../../config/app-config.js';
import { ShareStatusResponse } from '../dto/share.response.js';
import { ShareEntity } from '../share.entity.js';
import { ID_SHAPE } from '../share-token.js';

export class GetShareQuery extends Query<ShareStatusResponse> {
  constructor(
    readonly actor: Actor,
    readonly shareId: string,
  ) {
    super();
  }
}

/**
 * One link of the caller's account with its status and analytics, as a listing shows it; revoked, invalidated and
 * expired links included, since their analytics stay. Another account's link is not found.
 */
@QueryHandler(GetShareQuery)
export class GetShareHandler implements IQueryHandler<GetShareQuery> {
  constructor(
    @InjectRepository(ShareEntity) private readonly shares: Repository<ShareEntity>,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async execute({ actor, shareId }: GetShareQuery): Promise<ShareStatusResponse> {
    const share = ID_SHAPE.test(shareId) ? await this.shares.findOneBy({ id: shareId, accountId: actor.accountId }) : null;
    if (!share) throw new NotFound('share', shareId);
    return ShareStatusResponse.withStatus(share, this.config.publicBaseUrl, this.clock.now());
  }
}
