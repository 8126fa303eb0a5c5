import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { INestApplication } from '@nestjs/common';
import type { Request } from 'express';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module.js';
import { API_VERSION, completeOpenApiDocument } from './common/http/openapi.js';
import { documentJsonBodyLimits, jsonBodyParser } from './common/http/request-body.js';
import { applyHttpServerLimits } from './common/http/http-server-limits.js';
import { EXPOSED_API_HEADERS } from './common/http/cors.js';
import { applyMigrations } from './infra/database/apply-migrations.js';
import { requestIdMiddleware } from './common/http/request-id.js';
import { httpMetricsMiddleware } from './infra/observability/http-metrics.middleware.js';
import { Metrics } from './infra/observability/metrics.js';
import { requestLoggerOptions, requestLogging } from './infra/observability/request-logging.js';
import { type AppConfig, loadConfig } from './config/app-config.js';
import { isTusDiscovery, TUS_REQUEST_HEADERS, TUS_RESPONSE_HEADERS } from './modules/uploads/tus-protocol.js';

export const API_DESCRIPTION = `
Upload files into folders, list and search them, move them to a trash with a 30-day recovery window or delete them for good,
share them through links, and receive signed webhook events.

**Authentication**: every /v1 route takes \`Authorization: Bearer <API_KEY>\`. Click *Authorize* and paste a key
(create one with \`npm run cli -- accounts create --name NAME --plan free\`). Each route states the scope it needs
(\`x-required-scope\`) and whether it needs an elevated key (\`x-requires-elevated-key\`).

**Envelope**: success is \`{success: true, data[, pagination]}\`, failure \`{success: false, error: {code, message[, details]}}\`.

**Rate limits**: per account and plan (Free 60, Pro 300, Enterprise 1,000 requests a minute), in fixed one-minute windows.
Every authenticated answer carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\`
(Unix time in seconds when the window resets); a refused request gets 429 with \`Retry-After\` in seconds.
`.trim();

/** Builds the HTTP application: migrations applied, OpenAPI at /docs, ready to listen. */
export async function createApp(config: AppConfig): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forServer(config), { bufferLogs: true });
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  // No weak ETags on JSON answers: ETag is the MD5 of a file's content, sent by downloads only.
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  // First of all, so every request is counted, those refused before routing included.
  app.use(httpMetricsMiddleware(app.get(Metrics)));
  // Before the body parser, so a body that cannot be parsed is still answered with its request id.
  app.use(requestIdMiddleware);
  // The request log line, before anything that may answer: the body parser's refusals and the queue dashboard (mounted
  // by Bull Board's global module, whose middleware Nest runs before any other module's) are logged like the rest.
  app.use(requestLogging(requestLoggerOptions(config.logLevel)));
  app.use(jsonBodyParser());
  applyHttpServerLimits(app.getHttpServer(), config);
  // API keys travel in a header, never in cookies, so any origin may call the API from a browser.
  // Header lists joined once here, not by the cors middleware on every request.
  const cors = {
    origin: '*',
    allowedHeaders: ['Authorization', 'Content-Type', 'Range', 'If-Match', 'If-None-Match', 'If-Range', 'If-Unmodified-Since', 'If-Modified-Since', 'X-Request-Id', 'X-Share-Password', 'Idempotency-Key', ...TUS_REQUEST_HEADERS].join(','),
    exposedHeaders: [...EXPOSED_API_HEADERS, ...TUS_RESPONSE_HEADERS].join(','),
    maxAge: 600,
  };
  const corsForTusDiscovery = { ...cors, preflightContinue: true };
  // A tus OPTIONS that is not a preflight is protocol discovery: it goes on to the uploads controller.
  app.enableCors((req: Request, done) => done(null, isTusDiscovery(req) ? corsForTusDiscovery : cors));
  await applyMigrations(app.get(DataSource));

  SwaggerModule.setup('docs', app, openApiDocument(app), {
    jsonDocumentUrl: 'docs-json',
    customSiteTitle: 'File Storage API',
    swaggerOptions: { persistAuthorization: true, displayRequestDuration: true },
  });
  return app;
}

/**
 * The OpenAPI document of the application's routes. Needs no database or Redis: `npm run openapi`
 * builds it from an application created in preview mode.
 */
export function openApiDocument(app: INestApplication): OpenAPIObject {
  const document = completeOpenApiDocument(
    SwaggerModule.createDocument(
      app,
      new DocumentBuilder()
        .setTitle('File Storage API')
        .setDescription(API_DESCRIPTION)
        .setVersion(API_VERSION)
        // bearerFormat is set because Nest's default for it is "JWT", and keys are opaque strings.
        .addBearerAuth(
          {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'fss_…',
            description: 'An API key, sent as `Authorization: Bearer <API_KEY>`: an opaque `fss_` string (not a JWT), made by `cli accounts create` or `POST /v1/api-keys`.',
          },
          'api-key',
        )
        .build(),
    ),
  );
  documentJsonBodyLimits(document);
  return document;
}

/**
 * The document as `npm run openapi` writes it to openapi.json: built from the application in
 * preview mode (nothing connects to the database or Redis) with a neutral configuration.
 */
export async function generateOpenApiDocument(): Promise<OpenAPIObject> {
  const config = loadConfig({ NODE_ENV: 'development', DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' });
  const app = await NestFactory.create(AppModule.forServer(config), { preview: true, logger: false, abortOnError: false });
  try {
    return openApiDocument(app);
  } finally {
    await app.close();
  }
}
