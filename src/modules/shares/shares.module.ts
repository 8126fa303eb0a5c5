import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FileEntity } from '../files/file.entity.js';
import { FilesModule } from '../files/files.module.js';
import { AccessShareHandler } from './commands/access-share.command.js';
import { CreateShareHandler } from './commands/create-share.command.js';
import { RevokeShareHandler } from './commands/revoke-share.command.js';
import { PasswordAttempts } from './password-attempts.js';
import { PublicSharesController } from './public-shares.controller.js';
import { FindPublicShareHandler } from './queries/find-public-share.query.js';
import { GetShareHandler } from './queries/get-share.query.js';
import { ListSharesHandler } from './queries/list-shares.query.js';
import { ShareEntity } from './share.entity.js';
import { SharesController } from './shares.controller.js';

// The file and outbox entities are registered here too (TypeORM deduplicates), so this module stands on its own.
@Module({
  imports: [TypeOrmModule.forFeature([ShareEntity, FileEntity]), FilesModule],
  controllers: [SharesController, PublicSharesController],
  providers: [CreateShareHandler, RevokeShareHandler, AccessShareHandler, ListSharesHandler, GetShareHandler, FindPublicShareHandler, PasswordAttempts],
})
export class SharesModule {}
