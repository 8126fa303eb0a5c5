import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { StorageModule } from '../../../infra/storage/storage.module.js';
import { AccountEntity } from '../../accounts/account.entity.js';
import { FileEntity } from '../../files/file.entity.js';
import { ShareEntity } from '../../shares/share.entity.js';
import { PurgeTrashHandler } from '../commands/purge-trash.command.js';
import { TRASH_CLI } from './trash.cli.js';

/** `trash purge`: the purge handler and the blob storage it deletes from. */
@Module({
  imports: [StorageModule, TypeOrmModule.forFeature([FileEntity, ShareEntity, AccountEntity])],
  providers: [PurgeTrashHandler, ...TRASH_CLI],
})
export class TrashCliModule {}
