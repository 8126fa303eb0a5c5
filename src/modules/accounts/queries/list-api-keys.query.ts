import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Page, Pagination } from '../../../common/http/envelope.js';
import type { PageRequest } from '../../../common/http/pagination.request.js';
import { ApiKeyEntity } from '../api-key.entity.js';
import { ApiKeyResponse } from '../dto/api-key.response.js';

/** The account's live keys, newest first; secrets are never part of a listing. */
export class ListApiKeysQuery extends Query<Page<ApiKeyResponse>> {
  constructor(
    readonly actor: Actor,
    readonly page: PageRequest,
  ) {
    super();
  }
}

@QueryHandler(ListApiKeysQuery)
export class ListApiKeysHandler implements IQueryHandler<ListApiKeysQuery> {
  constructor(@InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>) {}

  async execute({ actor, page }: ListApiKeysQuery): Promise<Page<ApiKeyResponse>> {
    const [keys, total] = await this.keys.findAndCount({
      where: { accountId: actor.accountId, revokedAt: IsNull() },
      order: { createdAt: 'DESC', id: 'DESC' },
      skip: page.offset,
      take: page.per_page,
    });
    return new Page(keys.map(ApiKeyResponse.from), Pagination.of(page.page, page.per_page, total));
  }
}
