import { AsyncLocalStorage } from 'node:async_hooks';
import { PassThrough, type Readable } from 'node:stream';
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
  /** Upload rows this request has read (ResumableUploadRows.find), until it changes them. */
  rows?: Map<string, Promise<unknown>>;
  /** The upload a creation request made (onUploadCreate), so a creation answered with an error can give it up. */
  createdUploadId?: string;
  /** When the unfinished upload of this request expires, as stored: read by HEAD, moved on by a PATCH (Upload-Expires). */
  expiresAt?: Date;
}

export const tusRequests = new AsyncLocalStorage<TusRequest>();

/** The authenticated caller of the current tus request. */
export function tusActor(): Actor {
  const actor = tusRequests.getStore()?.actor;
  if (!actor) throw new Error('A tus hook ran outside an authenticated request');
  return actor;
}

/**
 * The bytes of the current tus request, straight from the socket (TusProtocol hands @tus/server
 * no body, see there). As @tus/server does with a body, a client that goes away ends it early
 * instead of failing it: what arrived is stored, and the upload resumes from there.
 */
export function tusRequestBody(): Readable {
  const request = tusRequests.getStore()?.request;
  if (!request) throw new Error('A tus store write ran outside a tus request');
  const body = new PassThrough();
  const cut = () => {
    request.unpipe(body);
    body.end();
  };
  request.once('error', cut);
  request.once('close', () => {
    if (!request.complete) cut();
  });
  return request.pipe(body);
}

/**
 * `read()` of the upload `id`, once per tus request: the reads that follow (@tus/server's getUpload,
 * the file store's own, the store's write, all under the upload's lock, which keeps every other
 * writer away) get the same answer until `forgetRow(id)`, which every change of the row calls.
 * Outside a tus request (jobs, commands) it just reads.
 */
export function rememberedRow<T>(id: string, read: () => Promise<T>): Promise<T> {
  const context = tusRequests.getStore();
  if (!context) return read();
  context.rows ??= new Map();
  let row = context.rows.get(id) as Promise<T> | undefined;
  if (!row) {
    row = read();
    context.rows.set(id, row);
    row.catch(() => context.rows?.delete(id));
  }
  return row;
}

/** The row of `id` changed: the next read in this request goes to the database. */
export function forgetRow(id: string): void {
  tusRequests.getStore()?.rows?.delete(id);
}
