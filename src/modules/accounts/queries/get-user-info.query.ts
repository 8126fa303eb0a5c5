import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { ScanningStatus } from '../../media/scanning/scanning-status.js';
import { AccountEntity } from '../account.entity.js';
import { UserInfoResponse } from '../dto/user-info.response.js';
import { UserEntity } from '../user.entity.js';

export class GetUserInfoQuery extends Query<UserInfoResponse> {
  constructor(readonly actor: Actor) {
    super();
  }
}

@QueryHandler(GetUserInfoQuery)
export class GetUserInfoHandler implements IQueryHandler<GetUserInfoQuery> {
  constructor(
    @InjectRepository(AccountEntity) private readonly accounts: Repository<AccountEntity>,
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    private readonly scanning: ScanningStatus,
  ) {}

  async execute({ actor }: GetUserInfoQuery): Promise<UserInfoResponse> {
    const [account, user, scanning] = await Promise.all([
      this.accounts.findOneBy({ id: actor.accountId }),
      this.users.findOneBy({ id: actor.userId }),
      this.scanning.current(),
    ]);
    if (!account || !user) throw new NotFound('user', actor.userId);
    const limit = account.storageLimit;
    const used = account.storageUsed;
    return {
      id: user.id,
      account_id: account.id,
      name: user.name,
      plan: account.plan,
      created_at: user.createdAt.toISOString(),
      storage: {
        used,
        limit,
        // What an upload can still take: the quota check counts bytes reserved by uploads in progress too.
        available: Math.max(0, limit - used - account.storageReserved),
        // In integers, as storage.warning computes it: (used / limit) * 100 in floating point gives 28 for 29 of 100 bytes.
        percentage: limit > 0 ? Math.floor((used * 100) / limit) : 100,
      },
      limits: { requests_per_minute: account.planLimits.requestsPerMinute, max_file_size: account.planLimits.maxFileSize },
      key: { id: actor.keyId, scopes: actor.scopes, elevated: actor.elevated },
      scanning,
    };
  }
}
