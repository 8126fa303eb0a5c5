import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository } from 'typeorm';
import { ApiKeyEntity } from '../api-key.entity.js';

/**
 * Whether the key with this id is still unrevoked, read from the database (never the key cache): for a
 * request that outlives its authentication, such as a long poll, before it answers what happened since.
 */
export class IsApiKeyLiveQuery extends Query<boolean> {
  constructor(readonly keyId: string) {
    super();
  }
}

@QueryHandler(IsApiKeyLiveQuery)
export class IsApiKeyLiveHandler implements IQueryHandler<IsApiKeyLiveQuery> {
  constructor(@InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>) {}

  execute({ keyId }: IsApiKeyLiveQuery): Promise<boolean> {
    return this.keys.existsBy({ id: keyId, revokedAt: IsNull() });
  }
}
