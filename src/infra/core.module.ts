import { DynamicModule, Global, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LoggerModule } from 'nestjs-pino';
import { Clock } from '../common/clock.js';
import { ListCursors } from '../common/http/list-cursor.js';
import { assignRequestId } from '../common/http/request-id.js';
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

/** What every process (server, CLI, workers) shares: configuration, clock, database, Redis, CQRS buses, logs. */
@Global()
@Module({})
export class CoreModule {
  static register(config: AppConfig): DynamicModule {
    return {
      module: CoreModule,
      imports: [
        CqrsModule.forRoot(),
        LoggerModule.forRoot({
          pinoHttp: {
            level: config.logLevel,
            // The id is normally given by the first middleware (app.factory.ts); this covers any other app.
            genReqId: assignRequestId,
            redact: { paths: ['req.headers.authorization', 'req.headers["x-share-password"]', 'req.headers.cookie'], censor: '[redacted]' },
            customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
            serializers: {
              req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url.replace(/signature=[^&]+/, 'signature=[redacted]') }),
            },
          },
        }),
        TypeOrmModule.forRoot({ ...dataSourceOptions(config.database, { logStatements: config.logLevel === 'trace' }), autoLoadEntities: true }),
        // Every module records domain events, so the outbox belongs to the core; so does process liveness.
        TypeOrmModule.forFeature([OutboxEventEntity, ServerInstanceEntity]),
        RedisModule,
      ],
      providers: [{ provide: AppConfig, useValue: config }, Clock, Transactions, ServerInstance, OutboxSignal, OutboxCommitSubscriber, WalCheckpointer, ListCursors],
      exports: [AppConfig, Clock, Transactions, ServerInstance, OutboxSignal, ListCursors, CqrsModule, TypeOrmModule],
    };
  }
}
