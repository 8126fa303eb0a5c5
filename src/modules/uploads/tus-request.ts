import { AsyncLocalStorage } from 'node:async_hooks';
import type { Request, Response } from 'express';
import type { Actor } from '../../common/auth/actor.js';

/**
 * The caller of the tus request being handled. @tus/server calls our hooks and store with a web
 * Request only; they read who is calling (the actor the guards authenticated) from here.
 */
export interface TusRequest {
  /** Null for OPTIONS, the one public tus request. */
  actor: Actor | null;
  request: Request;
  response: Response;
}

export const tusRequests = new AsyncLocalStorage<TusRequest>();

/** The authenticated caller of the current tus request. */
export function tusActor(): Actor {
  const actor = tusRequests.getStore()?.actor;
  if (!actor) throw new Error('A tus hook ran outside an authenticated request');
  return actor;
}
