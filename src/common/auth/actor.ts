import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { PlanName } from '../../modules/accounts/plans.js';
import type { Scope } from './scopes.js';

/** Who is calling: the API key that authenticated the request and the account it acts for. */
export interface Actor {
  accountId: string;
  userId: string;
  keyId: string;
  scopes: Scope[];
  elevated: boolean;
  plan: PlanName;
}

declare module 'express-serve-static-core' {
  interface Request {
    actor?: Actor;
  }
}

/** Injects the authenticated Actor into a route handler. */
export const CurrentActor = createParamDecorator((_: unknown, context: ExecutionContext): Actor => {
  const actor = context.switchToHttp().getRequest<Request>().actor;
  if (!actor) throw new Error('CurrentActor used on a route that is not authenticated');
  return actor;
});
