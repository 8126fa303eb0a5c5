import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { Page, Pagination } from '../../../common/http/envelope.js';
import { AppConfig } from '../../../config/app-config.js';
import { ShareStatusResponse } from '../dto/share.response.js';
import type { ListSharesRequest } from '../dto/list-shares.request.js';
import { ShareEntity } from '../share.entity.js';

/** The account's share links, newest first, revoked and invalidated ones included (their analytics stay). */
export class ListSharesQuery extends Query<Page<ShareStatusResponse>> {
  constructor(
    readonly actor: Actor,
    readonly request: ListSharesRequest,
  ) {
    super();
  }
}

@QueryHandler(ListSharesQuery)
export class ListSharesHandler implements IQueryHandler<ListSharesQuery> {
  constructor(
    @InjectRepository(ShareEntity) private readonly shares: Repository<ShareEntity>,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async execute({ actor, request }: ListSharesQuery): Promise<Page<ShareStatusResponse>> {
    const [shares, total] = await this.shares.findAndCount({
      where: { accountId: actor.accountId, ...(request.file_id === undefined ? {} : { fileId: request.file_id }) },
      order: { createdAt: 'DESC', id: 'DESC' },
      skip: request.offset,
      take: request.per_page,
    });
    const now = this.clock.now();
    return new Page(
      shares.map((share) => ShareStatusResponse.withStatus(share, this.config.publicBaseUrl, now)),
      Pagination.of(request.page, request.per_page, total),
    );
  }
}
