import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { PermissionDenied } from '../errors/api-error.js';
import { ACCESS_METADATA, type AccessRule } from './access.decorator.js';

/** Checks the scope and elevation a route declares with @RequireScope against the caller's key. */
@Injectable()
export class ScopeGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const rule = this.reflector.getAllAndOverride<AccessRule | undefined>(ACCESS_METADATA, [context.getHandler(), context.getClass()]);
    if (!rule || rule.kind === 'public') return true;
    const actor = context.switchToHttp().getRequest<Request>().actor;
    if (!actor) return false;
    if (rule.scope && !actor.scopes.includes(rule.scope)) {
      throw new PermissionDenied(`This API key lacks the "${rule.scope}" scope.`, { required_scope: rule.scope, key_scopes: actor.scopes });
    }
    if (rule.elevated && !actor.elevated) {
      throw new PermissionDenied('This operation needs an elevated API key.', { requires_elevated: true });
    }
    return true;
  }
}
