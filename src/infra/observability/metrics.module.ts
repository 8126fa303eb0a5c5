import { Global, Module } from '@nestjs/common';
import { MetricsCollector } from './metrics-collector.js';
import { MetricsController } from './metrics.controller.js';
import { Metrics } from './metrics.js';
import { QueueErrorLogger } from './queue-error-logger.js';

/** Prometheus metrics at /metrics, and queue error logging (server only). */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [Metrics, MetricsCollector, QueueErrorLogger],
  exports: [Metrics],
})
export class MetricsModule {}
