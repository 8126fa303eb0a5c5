import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountEntity } from './account.entity.js';
import { ApiKeysController, UserController } from './accounts.controller.js';
import { ApiKeyCache } from './api-key-cache.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { CreateAccountHandler } from './commands/create-account.command.js';
import { CreateApiKeyHandler } from './commands/create-api-key.command.js';
import { RecordKeyUseHandler } from './commands/record-key-use.command.js';
import { RevokeApiKeyHandler } from './commands/revoke-api-key.command.js';
import { AuthenticateApiKeyHandler } from './queries/authenticate-api-key.query.js';
import { GetUserInfoHandler } from './queries/get-user-info.query.js';
import { IsApiKeyLiveHandler } from './queries/is-api-key-live.query.js';
import { ListApiKeysHandler } from './queries/list-api-keys.query.js';
import { UserEntity } from './user.entity.js';

@Module({
  imports: [TypeOrmModule.forFeature([AccountEntity, UserEntity, ApiKeyEntity])],
  controllers: [UserController, ApiKeysController],
  providers: [
    ApiKeyCache,
    CreateAccountHandler,
    CreateApiKeyHandler,
    RevokeApiKeyHandler,
    RecordKeyUseHandler,
    AuthenticateApiKeyHandler,
    GetUserInfoHandler,
    IsApiKeyLiveHandler,
    ListApiKeysHandler,
  ],
  // The authentication guard starts the cache's subscription when the HTTP server starts.
  exports: [ApiKeyCache],
})
export class AccountsModule {}
