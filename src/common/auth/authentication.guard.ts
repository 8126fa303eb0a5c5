import { CanActivate, ExecutionContext, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Request } from 'express';
import { ApiKeyCache } from '../../modules/accounts/api-key-cache.js';
import { RecordKeyUseCommand } from '../../modules/accounts/commands/record-key-use.command.js';
import { AuthenticateApiKeyQuery } from '../../modules/accounts/queries/authenticate-api-key.query.js';
import { Clock } from '../clock.js';
import { AuthenticationFailed } from '../errors/api-error.js';
import { clientNetwork } from '../net/ip-address.js';
import { ACCESS_METADATA, type AccessRule } from './access.decorator.js';
import { FailedAuthentications } from './failed-authentications.js';

/** The scheme is case-insensitive (RFC 9110, 11.1) and may be followed by more than one space. */
const BEARER = /^Bearer +([A-Za-z0-9_-]{16,128})$/i;
const KEY_USE_RESOLUTION_MS = 60_000;

/**
 * Resolves `Authorization: Bearer <key>` to an Actor on every route that is not public. A client
 * address that keeps presenting wrong keys is refused for the rest of the minute (FailedAuthentications).
 */
@Injectable()
export class AuthenticationGuard implements CanActivate, OnModuleInit {
  private readonly logger = new Logger('Authentication');

  constructor(
    private readonly reflector: Reflector,
    private readonly queries: QueryBus,
    private readonly commands: CommandBus,
    private readonly clock: Clock,
    private readonly failures: FailedAuthentications,
    private readonly keyCache: ApiKeyCache,
  ) {}

  /** Key lookups are cached only while invalidations can be heard, so the server listens from the start; refused clients too. */
  onModuleInit(): void {
    this.keyCache.listen();
    this.failures.listen();
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const rule = this.reflector.getAllAndOverride<AccessRule | undefined>(ACCESS_METADATA, [context.getHandler(), context.getClass()]);
    if (rule?.kind === 'public') return true;
    const request = context.switchToHttp().getRequest<Request>();
    const header = request.headers.authorization;
    if (!header) throw new AuthenticationFailed();
    // The client's address (behind trust-proxy rules) is worked out only when a limit needs it, not on every request.
    if (this.failures.refusesAnyone) this.failures.assertAllowed(clientNetwork(request.ip));
    // Node keeps the first of repeated Authorization headers and drops the rest; which key was meant is unclear, so neither is used.
    if ((request.headersDistinct.authorization?.length ?? 0) > 1) {
      throw await this.failures.record(clientNetwork(request.ip), new AuthenticationFailed('Send one Authorization header, not several.'));
    }
    const match = BEARER.exec(header.trim());
    if (!match) throw await this.failures.record(clientNetwork(request.ip), new AuthenticationFailed('The Authorization header must be "Bearer <API_KEY>".'));
    const authentication = await this.queries.execute(new AuthenticateApiKeyQuery(match[1]));
    if (!authentication) throw await this.failures.record(clientNetwork(request.ip), new AuthenticationFailed('The API key is not valid or has been revoked.'));
    request.actor = authentication.actor;
    const now = this.clock.now();
    if (!authentication.lastUsedAt || now.getTime() - authentication.lastUsedAt.getTime() > KEY_USE_RESOLUTION_MS) {
      // The answer may come from the key cache: noted there too, so the next requests do not record the use again.
      authentication.lastUsedAt = now;
      // Bookkeeping only: the request does not wait for it, and a failure must not fail the request.
      this.commands.execute(new RecordKeyUseCommand(authentication.actor.keyId, now)).catch((error: unknown) => {
        this.logger.warn({ err: error }, 'Could not record key use');
      });
    }
    return true;
  }
}
