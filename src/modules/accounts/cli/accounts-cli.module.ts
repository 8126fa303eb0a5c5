import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountEntity } from '../account.entity.js';
import { ApiKeyEntity } from '../api-key.entity.js';
import { CreateAccountHandler } from '../commands/create-account.command.js';
import { UserEntity } from '../user.entity.js';
import { ACCOUNTS_CLI } from './accounts.cli.js';

/** `accounts create`: its handler, without the module's HTTP side. */
@Module({
  imports: [TypeOrmModule.forFeature([AccountEntity, UserEntity, ApiKeyEntity])],
  providers: [CreateAccountHandler, ...ACCOUNTS_CLI],
})
export class AccountsCliModule {}
