import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import type { Page } from '../../../common/http/envelope.js';
import { type CursorScope, ListCursors } from '../../../common/http/list-cursor.js';
import { keysetAfter, keysetOrderByCondition, type KeysetOrder } from '../../../infra/database/keyset.js';
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

const NEWEST_FIRST: KeysetOrder = { column: 's.created_at', id: 's.id', descending: true };

@QueryHandler(ListSharesQuery)
export class ListSharesHandler implements IQueryHandler<ListSharesQuery> {
  constructor(
    @InjectRepository(ShareEntity) private readonly shares: Repository<ShareEntity>,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly cursors: ListCursors,
  ) {}

  async execute({ actor, request }: ListSharesQuery): Promise<Page<ShareStatusResponse>> {
    const scope: CursorScope = { list: 'shares', accountId: actor.accountId, query: { file_id: request.file_id } };
    const window = this.cursors.open(request, scope);
    const query = this.shares.createQueryBuilder('s').where('s.account_id = :accountId', { accountId: actor.accountId });
    if (request.file_id !== undefined) query.andWhere('s.file_id = :fileId', { fileId: request.file_id });
    const total = await query.getCount();
    if (window.after) query.andWhere(keysetAfter(NEWEST_FIRST, [':afterKey', ':afterId']), { afterKey: window.after[0], afterId: window.after[1] });
    const shares = await query.orderBy(keysetOrderByCondition(NEWEST_FIRST)).offset(window.offset).limit(window.limit).getMany();
    const now = this.clock.now();
    return this.cursors.page(
      window,
      scope,
      shares,
      total,
      (share) => [share.createdAt.toISOString(), share.id],
      (share) => ShareStatusResponse.withStatus(share, this.config.publicBaseUrl, now),
    );
  }
}
