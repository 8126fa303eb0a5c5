import { createHash, timingSafeEqual } from 'node:crypto';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { BullBoardModule } from '@bull-board/nestjs';
import { DynamicModule, Module } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { clientNetwork } from '../../common/net/ip-address.js';
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
          adapter: DashboardExpressAdapter,
          middleware: [dashboardHeaders, refuseCrossSiteWrites, basicAuth(admin)],
          boardOptions: { uiConfig: { boardTitle: 'File storage queues' } },
        }),
        ...ALL_QUEUES.map((name) => BullBoardModule.forFeature({ name, adapter: BullMQAdapter })),
      ],
    };
  }
}

/** Wrong credentials a client address may send in a minute; after that every attempt is refused until the minute ends. */
export const FAILED_LOGINS_PER_MINUTE = 10;
const MINUTE_MS = 60_000;
/** Bounds the memory of addresses seen (they are many only when TRUST_PROXY lets clients name their own). */
const MAX_ADDRESSES = 10_000;

/**
 * Wrong dashboard passwords per client address, in fixed one-minute windows, so the password cannot be guessed at
 * the speed of the network. Kept per process: with several processes an attacker gets a few more guesses, not millions.
 */
class FailedLogins {
  private readonly byAddress = new Map<string, { count: number; resetAt: number }>();

  /** Seconds until this address may try again; 0 when it may now. */
  retryAfterSeconds(address: string, now: number): number {
    const entry = this.byAddress.get(address);
    if (!entry || entry.resetAt <= now || entry.count < FAILED_LOGINS_PER_MINUTE) return 0;
    return Math.ceil((entry.resetAt - now) / 1000);
  }

  record(address: string, now: number): void {
    const entry = this.byAddress.get(address);
    if (entry && entry.resetAt > now) {
      entry.count++;
      return;
    }
    if (this.byAddress.size >= MAX_ADDRESSES) this.forgetExpired(now);
    this.byAddress.set(address, { count: 1, resetAt: now + MINUTE_MS });
  }

  private forgetExpired(now: number): void {
    for (const [address, entry] of this.byAddress) if (entry.resetAt <= now) this.byAddress.delete(address);
    if (this.byAddress.size >= MAX_ADDRESSES) this.byAddress.clear();
  }
}

export function basicAuth(admin: { username: string; password: string }) {
  const expected = digest(`${admin.username}:${admin.password}`);
  const failedLogins = new FailedLogins();
  return (request: Request, response: Response, next: NextFunction): void => {
    // By network, as the API's limits count: an IPv6 /64 as one client, who could otherwise change address each guess.
    const address = clientNetwork(request.ip ?? request.socket.remoteAddress);
    const retryAfter = failedLogins.retryAfterSeconds(address, Date.now());
    if (retryAfter > 0) {
      response
        .status(429)
        .setHeader('Retry-After', String(retryAfter))
        .json({
          success: false,
          error: { code: 'rate_limit_exceeded', message: `Too many wrong queue dashboard credentials from this address; try again in ${retryAfter} s.` },
        });
      return;
    }
    const header = request.headers.authorization ?? '';
    // The scheme is case-insensitive (RFC 9110 11.1): some clients and proxies send `basic`.
    const match = /^Basic +([A-Za-z0-9+/=]+)$/i.exec(header.trim());
    // Comparing digests keeps the comparison constant-time whatever the lengths.
    if (match && timingSafeEqual(digest(Buffer.from(match[1], 'base64').toString('utf8')), expected)) return next();
    // A visit without credentials is how a browser learns it must ask for them: only a wrong guess counts.
    if (header !== '') failedLogins.record(address, Date.now());
    response
      .status(401)
      .setHeader('WWW-Authenticate', 'Basic realm="Queue dashboard", charset="UTF-8"')
      .json({ success: false, error: { code: 'authentication_failed', message: 'The queue dashboard needs the admin user name and password (HTTP basic auth).' } });
  };
}

/**
 * Every dashboard answer: never shown in another site's frame, where the admin's browser, holding the credentials,
 * would show the live dashboard under a page that tricks them into clicking "Clean" or "Retry" (clickjacking); never
 * kept by a cache, as it shows job data.
 */
export function dashboardHeaders(request: Request, response: Response, next: NextFunction): void {
  response.setHeader('X-Frame-Options', 'DENY');
  response.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
  // The page and the API's answers; the scripts and styles (Bull Board's public bundle) keep express.static's caching.
  if (!STATIC_ASSETS.test(request.originalUrl)) response.setHeader('Cache-Control', 'no-store');
  next();
}

const STATIC_ASSETS = new RegExp(`^${DASHBOARD_ROUTE}/static/`, 'i');

/** Bull Board's Express application, without the `X-Powered-By` header the rest of the service does not send either. */
class DashboardExpressAdapter extends ExpressAdapter {
  constructor() {
    super();
    this.getRouter().disable('x-powered-by');
  }
}

export function refuseCrossSiteWrites(request: Request, response: Response, next: NextFunction): void {
  if (!isCrossSiteWrite(request)) return next();
  response.status(403).json({
    success: false,
    error: { code: 'permission_denied', message: 'The queue dashboard takes changes only from its own pages, not from another site.' },
  });
}

/**
 * A browser sends the dashboard's basic-auth credentials with any request to it, a form another site posts included
 * (cross-site request forgery: "add a job", and any change a future Bull Board makes a POST). Changes are taken only
 * from the dashboard's own pages: `Sec-Fetch-Site` when the browser sends it (on HTTPS and localhost), else `Origin`,
 * which every browser sends with a POST, compared with the Host the request was sent to. A request with neither comes
 * from a script or curl, which no other site can make send the admin's credentials.
 */
function isCrossSiteWrite(request: Request): boolean {
  if (['GET', 'HEAD', 'OPTIONS'].includes(request.method)) return false;
  const fetchSite = request.headers['sec-fetch-site'];
  if (fetchSite !== undefined) return fetchSite !== 'same-origin' && fetchSite !== 'none';
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  try {
    // request.host: the Host header, or X-Forwarded-Host from a trusted proxy (TRUST_PROXY) that rewrites Host.
    return new URL(origin).host !== request.host;
  } catch {
    return true; // "null" (a sandboxed frame, a redirect) or anything else that names no site
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
