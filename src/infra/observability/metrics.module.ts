import { Global, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { HttpMetricsMiddleware } from './http-metrics.middleware.js';
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
export class MetricsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(HttpMetricsMiddleware).forRoutes('*');
  }
}
