import { DynamicModule, Module, Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import type { Request } from 'express';
import { TerminusModule } from '@nestjs/terminus';
import { ThrottlerModule } from '@nestjs/throttler';
import { FailedAuthentications } from './common/auth/failed-authentications.js';
import { AuthenticationGuard } from './common/auth/authentication.guard.js';
import { ScopeGuard } from './common/auth/scope.guard.js';
import { ApiExceptionFilter } from './common/http/api-exception.filter.js';
import { EnvelopeInterceptor } from './common/http/envelope.interceptor.js';
import { IdempotencyInterceptor } from './common/idempotency/idempotency.interceptor.js';
import { BodyMediaTypeInterceptor } from './common/http/body-media-type.interceptor.js';
import { ApiValidationPipe } from './common/http/validation.pipe.js';
import { PlanRateLimitGuard } from './common/rate-limit/plan-rate-limit.guard.js';
import { RedisThrottlerStorage } from './common/rate-limit/redis-throttler.storage.js';
import { Redis } from 'ioredis';
import { AppConfig } from './config/app-config.js';
import { REDIS } from './infra/redis/redis.module.js';
import { CoreModule } from './infra/core.module.js';
import { HealthController } from './infra/health/health.controller.js';
import { InstanceHeartbeat } from './infra/instances/instance-heartbeat.js';
import { QueueModule } from './infra/queue/queue.module.js';
import { MetricsModule } from './infra/observability/metrics.module.js';
import { StorageModule } from './infra/storage/storage.module.js';
import { ScheduleModule } from '@nestjs/schedule';
import { AccountsModule } from './modules/accounts/accounts.module.js';
import { EventsModule } from './modules/events/events.module.js';
import { FilesModule } from './modules/files/files.module.js';
import { FoldersModule } from './modules/folders/folders.module.js';
import { TrashModule, TrashScheduleModule } from './modules/trash/trash.module.js';
import { MediaWorkersModule } from './modules/media/media-workers.module.js';
import { ScanningModule } from './modules/media/scanning/scanning.module.js';
import { PLANS } from './modules/accounts/plans.js';
import { SharesModule } from './modules/shares/shares.module.js';
import { UploadsModule } from './modules/uploads/uploads.module.js';
import { WebhookDeliveryModule } from './modules/webhooks/delivery/webhook-delivery.module.js';
import { WebhooksModule } from './modules/webhooks/webhooks.module.js';

async function queueDashboard(admin: { username: string; password: string }): Promise<DynamicModule> {
  const { QueueDashboardModule } = await import('./infra/queue/queue-dashboard.module.js');
  return QueueDashboardModule.register(admin);
}

/** The domain modules, shared by the HTTP server and the CLI. */
const DOMAIN_MODULES: Type[] = [AccountsModule, FilesModule, FoldersModule, TrashModule, SharesModule, WebhooksModule];

@Module({})
export class AppModule {
  /** The HTTP server: domain modules plus auth, rate limits, envelope, health and background work. */
  static forServer(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.register(config),
        StorageModule,
        ScanningModule,
        QueueModule,
        TerminusModule.forRoot({ errorLogStyle: 'json' }),
        ThrottlerModule.forRootAsync({
          inject: [REDIS, AppConfig],
          useFactory: (redis: Redis, appConfig: AppConfig) => ({
            storage: new RedisThrottlerStorage(redis, appConfig),
            skipIf: () => !appConfig.rateLimitsEnabled,
            throttlers: [
              {
                name: 'default',
                ttl: 60_000,
                limit: (context) => {
                  const actor = context.switchToHttp().getRequest<Request>().actor;
                  return actor ? PLANS[actor.plan].requestsPerMinute : appConfig.publicRateLimitPerMinute;
                },
              },
            ],
          }),
        }),
        ...DOMAIN_MODULES,
        // Resumable uploads (tus) are an HTTP protocol: the server has them, the CLI does not.
        UploadsModule,
        MetricsModule,
        WebhookDeliveryModule,
        // The event feed: its sequencer, long-poll wake-ups and trim schedule run in the server process.
        EventsModule,
        // Bull Board (its UI, lodash, ejs) is loaded only where an admin is configured to see it.
        ...(config.admin ? [queueDashboard(config.admin)] : []),
        ScheduleModule.forRoot(),
        TrashScheduleModule.register(),
        // Thumbnails and virus scans: their queue workers run in the server process only.
        MediaWorkersModule,
      ],
      controllers: [HealthController],
      providers: [
        InstanceHeartbeat,
        FailedAuthentications,
        // Guards run in this order: who is calling, how often, and may they do this.
        { provide: APP_GUARD, useClass: AuthenticationGuard },
        { provide: APP_GUARD, useClass: PlanRateLimitGuard },
        { provide: APP_GUARD, useClass: ScopeGuard },
        { provide: APP_PIPE, useClass: ApiValidationPipe },
        { provide: APP_INTERCEPTOR, useClass: BodyMediaTypeInterceptor },
        { provide: APP_INTERCEPTOR, useClass: IdempotencyInterceptor },
        { provide: APP_INTERCEPTOR, useClass: EnvelopeInterceptor },
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
      ],
    };
  }

  /** An operator's context (tests reading and writing like another process would): the domain modules without HTTP concerns, schedulers or queue workers. */
  static forOperatorContext(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [CoreModule.register(config), StorageModule, ScanningModule, ...DOMAIN_MODULES],
    };
  }
}
