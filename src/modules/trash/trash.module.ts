import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountEntity } from '../accounts/account.entity.js';
import { FileEntity } from '../files/file.entity.js';
import { ShareEntity } from '../shares/share.entity.js';
import { EmptyTrashHandler } from './commands/empty-trash.command.js';
import { PurgeTrashHandler } from './commands/purge-trash.command.js';
import { ListTrashHandler } from './queries/list-trash.query.js';
import { TrashController } from './trash.controller.js';
import { TrashPurgeScheduler } from './trash-purge.scheduler.js';

@Module({
  imports: [TypeOrmModule.forFeature([FileEntity, ShareEntity, AccountEntity])],
  controllers: [TrashController],
  providers: [ListTrashHandler, EmptyTrashHandler, PurgeTrashHandler],
})
export class TrashModule {}

/** The purge schedule, for the server process only (the CLI runs `trash purge` on demand). */
@Module({})
export class TrashScheduleModule {
  static register(): DynamicModule {
    return { module: TrashScheduleModule, providers: [TrashPurgeScheduler] };
  }
}
