import { Global, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { HttpMetricsMiddleware } from './http-metrics.middleware.js';
import { MetricsCollector } from './metrics-collector.js';
import { MetricsController } from './metrics.controller.js';
import { Metrics } from './metrics.js';

/** Prometheus metrics at /metrics (server only). */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [Metrics, MetricsCollector],
  exports: [Metrics],
})
export class MetricsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(HttpMetricsMiddleware).forRoutes('*');
  }
}
