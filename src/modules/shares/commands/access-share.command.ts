import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { DataSource, IsNull } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { FileInfected, NotFound, PasswordRequired } from '../../../common/errors/api-error.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { domainEvent, Outbox } from '../../../infra/outbox/outbox.js';
import { assertRangeSatisfiable, type BlobConditions } from '../../../infra/storage/blob-response.js';
import { FileEntity } from '../../files/file.entity.js';
import { PasswordAttempts } from '../password-attempts.js';
import { ShareEntity } from '../share.entity.js';
import { findUsableShare, type UsableShare } from '../share-lookup.js';
import { verifySharePassword } from '../share-password.js';

export type ShareAccessAction = 'view' | 'download';

export interface ShareVisitor {
  ipAddress: string;
  userAgent: string | null;
}

/**
 * One use of a public link: checks that it works, the password (with the per-visitor lockout) and,
 * for downloads, that the file is not infected and that the requested range (`conditions`: the
 * request's Range, If-Range and If-None-Match) can be served; then counts the access and records
 * share.accessed in one transaction. `counted` is false for HEAD requests, which reveal nothing worth counting.
 */
export class AccessShareCommand extends Command<UsableShare> {
  constructor(
    readonly token: string,
    readonly password: string | undefined,
    readonly action: ShareAccessAction,
    readonly visitor: ShareVisitor,
    readonly counted = true,
    readonly conditions: BlobConditions = {},
  ) {
    super();
  }
}

@CommandHandler(AccessShareCommand)
export class AccessShareHandler implements ICommandHandler<AccessShareCommand> {
  constructor(
    private readonly dataSource: DataSource,
    private readonly transactions: Transactions,
    private readonly attempts: PasswordAttempts,
    private readonly clock: Clock,
  ) {}

  async execute({ token, password, action, visitor, counted, conditions }: AccessShareCommand): Promise<UsableShare> {
    const { share, file } = await findUsableShare(this.dataSource.manager, token, this.clock.now());
    if (share.passwordHash !== null) {
      // The lockout comes first, so even the right password is refused while it lasts.
      if (!password) {
        await this.attempts.assertNotLockedOut(share.id, visitor.ipAddress);
        throw new PasswordRequired();
      }
      const attempt = await this.attempts.take(share.id, visitor.ipAddress);
      if (!(await verifySharePassword(password, share.passwordHash))) {
        await this.attempts.countAsWrong(attempt);
        throw new PasswordRequired();
      }
      await this.attempts.giveBack(attempt);
    }
    if (action === 'download' && file.scanStatus === 'infected') throw new FileInfected();
    // Only after the password, so the 416 (which states the size) tells a stranger nothing.
    if (action === 'download') assertRangeSatisfiable(conditions, file, this.clock.now());
    if (!counted) return { share, file };
    return this.recordAccess(share, file, action, visitor);
  }

  private recordAccess(share: ShareEntity, file: FileEntity, action: ShareAccessAction, visitor: ShareVisitor): Promise<UsableShare> {
    return this.transactions.run(async (tx) => {
      const now = this.clock.now();
      // Conditional on the link still working: a concurrent trash or revoke that committed first wins.
      const result = await tx
        .createQueryBuilder()
        .update(ShareEntity)
        .set({ accessCount: () => 'access_count + 1', lastAccessedAt: now })
        .where({ id: share.id, revokedAt: IsNull(), invalidatedAt: IsNull() })
        .execute();
      const stillActive = await tx.getRepository(FileEntity).existsBy({ id: file.id, state: 'active' });
      if (!result.affected || !stillActive) throw new NotFound('Share link');
      await Outbox.record(
        tx,
        domainEvent('share.accessed', share.accountId, now, {
          share: { id: share.id, file_id: share.fileId },
          access: { ip_address: visitor.ipAddress, user_agent: visitor.userAgent, location: null, action },
        }),
      );
      const counted = Object.assign(new ShareEntity(), share, { accessCount: share.accessCount + 1, lastAccessedAt: now });
      return { share: counted, file };
    });
  }
}
