import { type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
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
export class SharesModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // Before the guards, so refusals (a 429 of the public rate limit included) carry it too.
    consumer.apply(keepOutOfSearchEngines).forRoutes(PublicSharesController);
  }
}

/**
 * A share link may be posted where crawlers find it; its answers (the page, the JSON, and above all the file, which a
 * search engine would index as a PDF or document) must not end up in search results. The page says so in a meta tag
 * too; only this header reaches downloads and JSON.
 */
function keepOutOfSearchEngines(_request: Request, response: Response, next: NextFunction): void {
  response.setHeader('X-Robots-Tag', 'noindex, nofollow');
  next();
}
