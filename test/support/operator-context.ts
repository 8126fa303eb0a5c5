import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../../src/app.module.js';
import { loadConfig } from '../../src/config/app-config.js';

/**
 * The application as the CLI builds it (no HTTP server, no workers), on a test environment: a test
 * reads and writes the database like an operator or another module would, from its own process
 * context, while the server under test runs as a separate process.
 */
export function startOperatorContext(env: Record<string, string>): Promise<INestApplicationContext> {
  return NestFactory.createApplicationContext(AppModule.forOperatorContext(loadConfig(env)), { logger: false });
}
