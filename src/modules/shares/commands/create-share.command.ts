import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { FileInfected, NotFound } from '../../../common/errors/api-error.js';
import { newId } from '../../../common/ids.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { domainEvent, Outbox } from '../../../infra/outbox/outbox.js';
import { FileEntity } from '../../files/file.entity.js';
import { ShareResponse } from '../dto/share.response.js';
import { ShareEntity } from '../share.entity.js';
import { hashSharePassword } from '../share-password.js';
import { generateShareToken } from '../share-token.js';

/** Creates a public link to an active file of the caller's account, optionally with a password and an expiry. */
export class CreateShareCommand extends Command<ShareResponse> {
  constructor(
    readonly actor: Actor,
    readonly fileId: string,
    readonly password: string | undefined,
    readonly expiresInSeconds: number | undefined,
  ) {
    super();
  }
}

@CommandHandler(CreateShareCommand)
export class CreateShareHandler implements ICommandHandler<CreateShareCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async execute({ actor, fileId, password, expiresInSeconds }: CreateShareCommand): Promise<ShareResponse> {
    // Hashing is deliberately slow, so it happens before the transaction, not while holding it.
    const passwordHash = password === undefined ? null : await hashSharePassword(password);
    return this.transactions.run(async (tx) => {
      // Share-locked: a trash or delete of the file waits for this link to exist and then invalidates it, or goes first and this one finds no file.
      const file = await tx.getRepository(FileEntity).findOne({ where: { id: fileId, accountId: actor.accountId, state: 'active' }, ...this.transactions.dialect.lockForShare<FileEntity>() });
      if (!file) throw new NotFound('file', fileId);
      if (file.scanStatus === 'infected') throw new FileInfected();
      const now = this.clock.now();
      const share = Object.assign(new ShareEntity(), {
        id: newId('shr'),
        accountId: actor.accountId,
        fileId: file.id,
        token: generateShareToken(),
        passwordHash,
        expiresAt: expiresInSeconds === undefined ? null : new Date(now.getTime() + expiresInSeconds * 1000),
        createdBy: actor.userId,
        createdAt: now,
        revokedAt: null,
        invalidatedAt: null,
        accessCount: 0,
        lastAccessedAt: null,
      } satisfies Omit<ShareEntity, 'isWithdrawn' | 'hasExpired' | 'isActive'>);
      await tx.getRepository(ShareEntity).insert(share);
      const response = ShareResponse.from(share, this.config.publicBaseUrl);
      await Outbox.record(
        tx,
        domainEvent('file.shared', actor.accountId, now, {
          file: { id: file.id, name: file.name },
          share: {
            id: response.id,
            url: response.url,
            password_protected: response.password_protected,
            expires_at: response.expires_at,
            created_by: response.created_by,
          },
        }),
      );
      return response;
    });
  }
}
