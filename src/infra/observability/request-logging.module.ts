import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { requestLoggerOptions, requestLogging } from './request-logging.js';

/** The HTTP server's request log lines (requestLogging); first of Nest's middleware, so every later step logs with the request. */
@Module({})
export class RequestLoggingModule implements NestModule {
  constructor(private readonly config: AppConfig) {}

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(requestLogging(requestLoggerOptions(this.config.logLevel))).forRoutes({ path: '*', method: RequestMethod.ALL });
  }
}
