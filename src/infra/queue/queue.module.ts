import { BullModule } from '@nestjs/bullmq';
import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AppConfig } from '../../config/app-config.js';
import { ALL_QUEUES } from './queue-names.js';
import { WorkerShutdown } from './worker-shutdown.js';

/**
 * BullMQ on REDIS_URL, with the run's key prefix so several deployments (or test runs) can share
 * one Redis. Modules register their processors (WorkerHost) themselves; queues are declared here.
 */
@Global()
@Module({
  imports: [
    DiscoveryModule,
    BullModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        connection: { url: config.redisUrl, maxRetriesPerRequest: null, enableOfflineQueue: true },
        prefix: `${config.redisKeyPrefix}:bull`,
        defaultJobOptions: { removeOnComplete: { count: 1000, age: 24 * 3600 }, removeOnFail: { count: 5000, age: 7 * 24 * 3600 } },
      }),
    }),
    BullModule.registerQueue(...ALL_QUEUES.map((name) => ({ name }))),
  ],
  providers: [WorkerShutdown],
  exports: [BullModule],
})
export class QueueModule {}
