import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountEntity } from '../account.entity.js';
import { ApiKeyEntity } from '../api-key.entity.js';
import { CreateApiKeyHandler } from '../commands/create-api-key.command.js';
import { UserEntity } from '../user.entity.js';
import { KEYS_CLI } from './keys.cli.js';

/** `keys create`: its handler, without the module's HTTP side. */
@Module({
  imports: [TypeOrmModule.forFeature([AccountEntity, UserEntity, ApiKeyEntity])],
  providers: [CreateApiKeyHandler, ...KEYS_CLI],
})
export class KeysCliModule {}
