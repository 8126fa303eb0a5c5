import { DynamicModule, Global, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LoggerModule } from 'nestjs-pino';
import { Clock } from '../common/clock.js';
import { ListCursors } from '../common/http/list-cursor.js';
import { AppConfig } from '../config/app-config.js';
import { dataSourceOptions } from './database/data-source-options.js';
import { ServerInstance } from './instances/server-instance.js';
import { ServerInstanceEntity } from './instances/server-instance.entity.js';
import { OutboxCommitSubscriber } from './outbox/outbox-commit.subscriber.js';
import { OutboxEventEntity } from './outbox/outbox-event.entity.js';
import { OutboxSignal } from './outbox/outbox-signal.js';
import { Transactions } from './database/transactions.js';
import { WalCheckpointer } from './database/wal-checkpointer.js';
import { RedisModule } from './redis/redis.module.js';
import { Draining } from './shutdown/draining.js';
import { requestLoggerOptions } from './observability/request-logging.js';

/** What every process (server, CLI, workers) shares: configuration, clock, database, Redis, CQRS buses, logs. */
@Global()
@Module({})
export class CoreModule {
  static register(config: AppConfig): DynamicModule {
    return {
      module: CoreModule,
      imports: [
        CqrsModule.forRoot(),
        // Requests are logged by requestLogging (infra/observability, registered by the HTTP server's module), which
        // makes each request's logger only when it writes; nestjs-pino's loggers read it from their request context.
        LoggerModule.forRoot({ pinoHttp: requestLoggerOptions(config.logLevel), useExisting: true, forRoutes: [] }),
        TypeOrmModule.forRoot({ ...dataSourceOptions(config.database, { logStatements: config.logLevel === 'trace' }), autoLoadEntities: true }),
        // Every module records domain events, so the outbox belongs to the core; so does process liveness.
        TypeOrmModule.forFeature([OutboxEventEntity, ServerInstanceEntity]),
        RedisModule,
      ],
      providers: [{ provide: AppConfig, useValue: config }, Clock, Transactions, ServerInstance, OutboxSignal, OutboxCommitSubscriber, WalCheckpointer, ListCursors, Draining],
      exports: [AppConfig, Clock, Transactions, ServerInstance, OutboxSignal, ListCursors, Draining, CqrsModule, TypeOrmModule],
    };
  }
}
