import { DynamicModule, Global, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { dataSourceOptions } from '../infra/database/data-source-options.js';
import { Transactions } from '../infra/database/transactions.js';
import { OutboxEventEntity } from '../infra/outbox/outbox-event.entity.js';

/**
 * What a CLI command needs from the core: configuration, clock, database and the command bus. Unlike the
 * server's CoreModule it has no Redis, no HTTP logger and no queues, so a command starts in a fraction of a second.
 */
@Global()
@Module({})
export class CliCoreModule {
  static register(config: AppConfig): DynamicModule {
    return {
      module: CliCoreModule,
      imports: [
        CqrsModule.forRoot(),
        // A command fails at once on an unreachable database, rather than after TypeORM's nine retries.
        TypeOrmModule.forRoot({ ...dataSourceOptions(config.database), autoLoadEntities: true, retryAttempts: 0 }),
        TypeOrmModule.forFeature([OutboxEventEntity]),
      ],
      providers: [{ provide: AppConfig, useValue: config }, Clock, Transactions],
      exports: [AppConfig, Clock, Transactions, CqrsModule, TypeOrmModule],
    };
  }
}
