import { createHash, timingSafeEqual } from 'node:crypto';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { BullBoardModule } from '@bull-board/nestjs';
import { DynamicModule, Module } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { ALL_QUEUES } from './queue-names.js';

export const DASHBOARD_ROUTE = '/admin/queues';

/**
 * Bull Board at /admin/queues, showing every queue of the service, behind HTTP basic auth
 * (ADMIN_USERNAME / ADMIN_PASSWORD). Not mounted at all when no admin is configured.
 */
@Module({})
export class QueueDashboardModule {
  static register(admin: { username: string; password: string }): DynamicModule {
    return {
      module: QueueDashboardModule,
      imports: [
        BullBoardModule.forRoot({
          route: DASHBOARD_ROUTE,
          adapter: ExpressAdapter,
          middleware: basicAuth(admin),
          boardOptions: { uiConfig: { boardTitle: 'File storage queues' } },
        }),
        ...ALL_QUEUES.map((name) => BullBoardModule.forFeature({ name, adapter: BullMQAdapter })),
      ],
    };
  }
}

export function basicAuth(admin: { username: string; password: string }) {
  const expected = digest(`${admin.username}:${admin.password}`);
  return (request: Request, response: Response, next: NextFunction): void => {
    const header = request.headers.authorization ?? '';
    // The scheme is case-insensitive (RFC 9110 11.1): some clients and proxies send `basic`.
    const match = /^Basic +([A-Za-z0-9+/=]+)$/i.exec(header.trim());
    // Comparing digests keeps the comparison constant-time whatever the lengths.
    if (match && timingSafeEqual(digest(Buffer.from(match[1], 'base64').toString('utf8')), expected)) return next();
    response
      .status(401)
      .setHeader('WWW-Authenticate', 'Basic realm="Queue dashboard", charset="UTF-8"')
      .json({ success: false, error: { code: 'authentication_failed', message: 'The queue dashboard needs the admin user name and password (HTTP basic auth).' } });
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
