import { applyDecorators, ExecutionContext, Injectable } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import { SkipThrottle, ThrottlerGuard, ThrottlerRequest } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { RateLimitExceeded } from '../errors/api-error.js';
import { clientNetwork } from '../net/ip-address.js';
import type { WindowRecord } from './redis-throttler.storage.js';

/**
 * The plan's requests-per-minute limit, counted per account across all its keys (per client
 * address for public routes, an IPv6 client by its /64). Runs after authentication, so the actor's plan is known, and before scope
 * checks, so refused requests count too. Every counted response carries the X-RateLimit headers,
 * with X-RateLimit-Reset as a Unix time in seconds.
 */
@Injectable()
export class PlanRateLimitGuard extends ThrottlerGuard {
  protected override async getTracker(req: Request): Promise<string> {
    return req.actor ? `account:${req.actor.accountId}` : `ip:${clientNetwork(req.ip)}`;
  }

  protected override generateKey(_context: ExecutionContext, tracker: string, name: string): string {
    // One counter per account (or IP) for all routes together, unlike the default per-route key.
    return `${name}:${tracker}`;
  }

  protected override async handleRequest({ context, limit, ttl, throttler, blockDuration }: ThrottlerRequest): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    const key = this.generateKey(context, await this.getTracker(request), throttler.name ?? 'default');
    const record = (await this.storageService.increment(key, ttl, limit, blockDuration, throttler.name ?? 'default')) as WindowRecord;
    response.setHeader('X-RateLimit-Limit', String(limit));
    response.setHeader('X-RateLimit-Remaining', String(Math.max(0, limit - record.totalHits)));
    response.setHeader('X-RateLimit-Reset', String(record.resetAt));
    if (record.isBlocked) throw new RateLimitExceeded(record.timeToBlockExpire, limit);
    return true;
  }
}

/**
 * A route not counted against the plan's requests per minute, its OpenAPI operation marked `x-rate-limited: false`: the
 * document then gives its answers no X-RateLimit headers, which it does not send.
 */
export function NotRateLimited(): MethodDecorator & ClassDecorator {
  return applyDecorators(SkipThrottle(), ApiExtension('x-rate-limited', false));
}
