import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountEntity } from '../accounts/account.entity.js';
import { FileEntity } from '../files/file.entity.js';
import { ShareEntity } from '../shares/share.entity.js';
import { CreateFolderHandler } from './commands/create-folder.command.js';
import { DeleteFolderHandler } from './commands/delete-folder.command.js';
import { UpdateFolderHandler } from './commands/update-folder.command.js';
import { FolderEntity } from './folder.entity.js';
import { FoldersController } from './folders.controller.js';
import { GetFolderHandler } from './queries/get-folder.query.js';
import { ListFoldersHandler } from './queries/list-folders.query.js';

@Module({
  imports: [TypeOrmModule.forFeature([FolderEntity, FileEntity, ShareEntity, AccountEntity])],
  controllers: [FoldersController],
  providers: [CreateFolderHandler, UpdateFolderHandler, DeleteFolderHandler, ListFoldersHandler, GetFolderHandler],
})
export class FoldersModule {}
