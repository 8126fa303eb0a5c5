import { createHash, randomUUID } from 'node:crypto';
import { applyDecorators, CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiHeader } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Redis } from 'ioredis';
import { finalize, from, Observable, switchMap, tap } from 'rxjs';
import { AppConfig } from '../../config/app-config.js';
import { REDIS } from '../../infra/redis/redis.module.js';
import { ApiError, InvalidRequest, ServiceUnavailable } from '../errors/api-error.js';
import { mediaTypeOf } from '../http/request-body.js';
import { SealedBox } from '../sealed-box.js';
import { isNotKeptForRetries } from './not-kept-for-retries.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** A replayed answer says so, as Stripe's does. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';
/** How long a complete answer is replayed. */
const ANSWER_TTL_SECONDS = 24 * 60 * 60;
/** A running request's lock expires this long after its last heartbeat, so a crashed process frees the key. */
export const LOCK_TTL_MS = 10_000;
const HEARTBEAT_MS = 3_000;
/**
 * An answer that could not be stored (Redis restarting, failing over) is tried again this often, for this long: the
 * client's retry, sent exactly because something went wrong, must find it rather than act a second time.
 */
const STORE_RETRY_EVERY_MS = 1_000;
const STORE_RETRY_FOR_MS = 60_000;
/** 1 to 255 printable ASCII characters (the IETF httpapi draft's key is an sf-string). */
const VALID_KEY = /^[\x20-\x7E]{1,255}$/;
/** Headers worth replaying; the rest (rate limits, request id, date) describe the new request. */
const REPLAYED_HEADERS = ['content-type', 'location', 'www-authenticate', 'retry-after', 'tus-resumable', 'upload-offset', 'upload-expires', 'x-file-id'];
/** Headers that say what a request without a JSON body creates (a tus creation's length and metadata). */
const FINGERPRINT_HEADERS = ['upload-length', 'upload-defer-length', 'upload-metadata', 'upload-concat'];
/**
 * Answers that ask the client to try again later are not kept, like a 5xx: a 409 conflict (a concurrent change, a
 * delivery still being attempted), 408, 423 locked, 425 and 429; and 413, whose storage_exceeded holds only until the
 * account frees space. Kept, the retry would be replayed the refusal.
 */
const RETRY_LATER_STATUSES = new Set([408, 409, 413, 423, 425, 429]);
/** A body written other than through `response.json` (a tus answer) is stored up to this size. */
const MAX_RAW_BODY_BYTES = 64 * 1024;

interface RunningRecord {
  state: 'running';
  fingerprint: string;
  owner: string;
}
/** A stored answer as Redis keeps it: the answer sealed (it may hold a new API key or webhook secret). */
interface CompleteRecord {
  state: 'complete';
  fingerprint: string;
  /** A StoredAnswer's JSON, sealed (SealedBox). */
  sealed?: string;
}
interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  /** The JSON answer; absent when the route wrote its answer itself (`raw`). */
  body?: unknown;
  /** An answer written without `response.json` (tus): its text, '' when empty. */
  raw?: string;
}

const METHOD_OVERRIDE_ROUTE = 'fss:method-override-route';

/**
 * Marks the POST route that stands for another method named in X-HTTP-Method-Override (tus's PATCH, HEAD or DELETE):
 * that request, not a POST, so Idempotency-Key does not apply there. Elsewhere the header changes nothing and the key
 * is honoured. Documents the header.
 */
export function MethodOverrideRoute(description: string): MethodDecorator {
  return applyDecorators(SetMetadata(METHOD_OVERRIDE_ROUTE, true), ApiHeader({ name: 'X-HTTP-Method-Override', required: true, description }));
}

/** A stored answer, sent again by the exception filter exactly as it was first sent. */
export class IdempotentReplay {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
    readonly body: unknown,
    /** Set for an answer that was not JSON: sent as these bytes (possibly none). */
    readonly raw?: string,
  ) {}
}

/**
 * Idempotency-Key on every authenticated POST: the first complete answer (below 500, other than a retry-later 4xx) is
 * stored per API key and Idempotency-Key for 24 hours in Redis, shared by every server process, and replayed for
 * a retry of the same request. The same key on a different request answers 422
 * idempotency_key_reused; a retry while the first is still running answers 409
 * idempotency_key_in_use. A running request holds a lock that it renews; if its process dies the
 * lock lapses and the key can be used again. A lock Redis lost (a restart, a failover) is taken again at the next
 * renewal, and an answer Redis could not take is stored once it is back.
 *
 * The answer is stored once the route has given it, whether or not the client is still there to read
 * it: a retry after a dropped connection must not act again. Until then the lock is held, even after
 * the connection closes.
 *
 * The request fingerprint is the method, path, query and, for JSON, the body. A multipart upload's
 * file is not read for it (the body is streamed to storage after this point): an upload is identified
 * by its query, Content-Type without the boundary and Content-Length; a tus creation by its Upload-*
 * headers and Content-Length.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  /** Answers are sealed in Redis: an API key's or a webhook's creation answer holds its secret. */
  private readonly answers: SealedBox;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly config: AppConfig,
    private readonly reflector: Reflector,
  ) {
    this.answers = new SealedBox(config.secretsEncryptionKey, 'idempotent-answers');
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    const given = request.headers[IDEMPOTENCY_HEADER];
    if (request.method !== 'POST' || !request.actor || given === undefined || this.reflector.get<boolean>(METHOD_OVERRIDE_ROUTE, context.getHandler())) {
      return next.handle();
    }
    // Node joins repeated headers of this name into one ("one, two"), a key the client never sent: refused instead.
    const key = (request.headersDistinct[IDEMPOTENCY_HEADER]?.length ?? 0) > 1 ? null : given;
    if (key === null || Array.isArray(key) || !VALID_KEY.test(key)) {
      throw InvalidRequest.fields([{ field: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters, sent once' }]);
    }
    const redisKey = idempotencyRecordKey(this.config.redisKeyPrefix, request.actor, key);
    const fingerprint = fingerprintOf(request);
    const claimed = this.claim(redisKey, fingerprint).catch((error: unknown) => {
      if (error instanceof ApiError || error instanceof IdempotentReplay) throw error;
      // Without Redis the key cannot be honoured; running the request anyway could do it twice.
      throw new ServiceUnavailable('Idempotency keys are unavailable for a moment; retry shortly.');
    });
    return from(claimed).pipe(
      switchMap((owner) => {
        const answer = this.recordAnswer(redisKey, fingerprint, owner, request, response);
        return next.handle().pipe(
          tap({
            error: (error: unknown) => {
              if (isNotKeptForRetries(error)) answer.doNotKeep();
            },
          }),
          finalize(answer.routeDone),
        );
      }),
    );
  }

  /** Takes the key for this request, or throws the replay, the reuse or the in-use answer. */
  private async claim(redisKey: string, fingerprint: string): Promise<string> {
    const owner = randomUUID();
    const running: RunningRecord = { state: 'running', fingerprint, owner };
    const taken = await this.redis.set(redisKey, JSON.stringify(running), 'PX', LOCK_TTL_MS, 'NX');
    if (taken === 'OK') return owner;
    const stored = await this.redis.get(redisKey);
    // The holder finished and its answer was not kept (a 5xx or a dropped connection) in between: try once more.
    if (stored === null) return this.claimOnce(redisKey, running);
    const record = JSON.parse(stored) as RunningRecord | CompleteRecord;
    if (record.fingerprint !== fingerprint) {
      throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used for a different request; use a new key for a new request.');
    }
    if (record.state === 'running') {
      throw keyInUse();
    }
    // Records stored before answers were sealed (for up to a day after an upgrade) hold the answer as it is.
    const answer = (record.sealed === undefined ? record : JSON.parse(this.openAnswer(record.sealed))) as StoredAnswer;
    throw new IdempotentReplay(answer.status, { ...answer.headers, [REPLAYED_HEADER]: 'true' }, answer.body, answer.raw);
  }

  /**
   * The stored answer's JSON. One sealed under another SECRETS_ENCRYPTION_KEY cannot be replayed, and the request may
   * already have acted, so it must not run again: the client is told to use a new key (not a 503, retried for a day).
   */
  private openAnswer(sealed: string): string {
    try {
      return this.answers.open(sealed);
    } catch {
      throw new ApiError(
        422,
        'idempotency_key_reused',
        'The answer kept for this Idempotency-Key can no longer be read (the server\'s SECRETS_ENCRYPTION_KEY changed since); if the request must be made again, send it with a new Idempotency-Key.',
      );
    }
  }

  private async claimOnce(redisKey: string, running: RunningRecord): Promise<string> {
    const taken = await this.redis.set(redisKey, JSON.stringify(running), 'PX', LOCK_TTL_MS, 'NX');
    if (taken !== 'OK') {
      throw keyInUse();
    }
    return running.owner;
  }

  /**
   * Renews the lock while the request runs; stores the answer once the route has given it (`response.end`), or
   * frees the key (an answer of 500 or more or asking for a retry, a refusal marked `notKeptForRetries`, one that streamed, or none:
   * the route ended without answering).
   */
  private recordAnswer(
    redisKey: string,
    fingerprint: string,
    owner: string,
    request: Request,
    response: Response,
  ): { routeDone: () => void; doNotKeep: () => void } {
    const running = JSON.stringify({ state: 'running', fingerprint, owner } satisfies RunningRecord);
    const heartbeat = setInterval(() => {
      this.redis.eval(RENEW_OR_RETAKE, 1, redisKey, owner, String(LOCK_TTL_MS), running).catch(() => undefined);
    }, HEARTBEAT_MS);
    heartbeat.unref();
    let settled = false;
    let keep = true;
    const settle = (record: CompleteRecord | null) => {
      if (settled) return;
      settled = true;
      clearInterval(heartbeat);
      if (record) this.storeAnswer(redisKey, owner, JSON.stringify(record), Date.now() + STORE_RETRY_FOR_MS);
      else this.redis.eval(DELETE_IF_OWNER, 1, redisKey, owner).catch(() => undefined);
    };
    let body: unknown;
    let streamed = false;
    const json = response.json.bind(response);
    response.json = (value: unknown) => {
      body = value;
      return json(value);
    };
    const write = response.write.bind(response) as (...args: unknown[]) => boolean;
    response.write = ((...args: unknown[]) => {
      streamed = true;
      return write(...args);
    }) as Response['write'];
    const end = response.end.bind(response) as (...args: unknown[]) => Response;
    response.end = ((...args: unknown[]) => {
      // The answer to a request whose body never all arrived (the client hung up mid-upload) is the cut's, not the
      // request's: the key is freed for the retry. One whose body did arrive is stored, whether or not its client stayed.
      settle(keep && (request.complete || !response.destroyed) ? this.completeRecord(fingerprint, response, body, streamed ? undefined : rawText(args[0])) : null);
      return end(...args);
    }) as Response['end'];
    // While the connection is open the answer is sure to follow. Once it is gone, a route that ended without one (the
    // exception filter drops the answer of a request whose client left) frees the key; the answer's own turn comes first.
    const unanswered = () => setImmediate(() => settle(null));
    return { routeDone: () => (response.destroyed ? unanswered() : response.once('close', unanswered)), doNotKeep: () => (keep = false) };
  }

  /** Stores the answer in place of this request's lock, or where Redis lost the lock; tried again while Redis is away. */
  private storeAnswer(redisKey: string, owner: string, record: string, retryUntil: number): void {
    this.redis.eval(STORE_IF_OWNER_OR_FREE, 1, redisKey, owner, record, String(ANSWER_TTL_SECONDS)).catch(() => {
      if (Date.now() < retryUntil) setTimeout(() => this.storeAnswer(redisKey, owner, record, retryUntil), STORE_RETRY_EVERY_MS).unref();
    });
  }

  private completeRecord(fingerprint: string, response: Response, body: unknown, raw: string | undefined): CompleteRecord | null {
    if (response.statusCode >= 500 || RETRY_LATER_STATUSES.has(response.statusCode) || (body === undefined && raw === undefined)) return null;
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = response.getHeader(name);
      if (value !== undefined) headers[name] = String(value);
    }
    const answer: StoredAnswer = { status: response.statusCode, headers, ...(body === undefined ? { raw } : { body }) };
    return { state: 'complete', fingerprint, sealed: this.answers.seal(JSON.stringify(answer)) };
  }
}

/** The text of the chunk `response.end` was given: '' for none, undefined when too large or not text. */
function rawText(chunk: unknown): string | undefined {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return '';
  if (typeof chunk === 'string') return Buffer.byteLength(chunk) <= MAX_RAW_BODY_BYTES ? chunk : undefined;
  if (Buffer.isBuffer(chunk) && chunk.length <= MAX_RAW_BODY_BYTES) return chunk.toString('utf8');
  return undefined;
}

/**
 * Where a key's record (running or complete) lives in Redis: per account and API key, the key hashed. Per API key, so a
 * weaker key of the account sending another key's Idempotency-Key is not replayed that key's answer (a new key's secret).
 */
export function idempotencyRecordKey(redisKeyPrefix: string, caller: { accountId: string; keyId: string }, key: string): string {
  return `${redisKeyPrefix}:idempotency:${caller.accountId}:${caller.keyId}:${createHash('sha256').update(key).digest('hex')}`;
}

function keyInUse(): ApiError {
  return new ApiError(409, 'idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry once it has finished.', undefined, {
    'Retry-After': '1',
  });
}

function fingerprintOf(request: Request): string {
  const hash = createHash('sha256').update(`${request.method} ${request.originalUrl}\n`);
  for (const name of FINGERPRINT_HEADERS) {
    const value = request.headers[name];
    if (value !== undefined) hash.update(`${name}: ${String(value)}\n`);
  }
  const contentType = mediaTypeOf(request.headers['content-type']);
  if (contentType === 'multipart/form-data') {
    hash.update(`multipart ${request.headers['content-length'] ?? 'chunked'}`);
  } else if (contentType === 'application/offset+octet-stream') {
    // A tus creation with its first bytes (creation-with-upload): not read for this either.
    hash.update(`tus ${request.headers['content-length'] ?? 'chunked'}`);
  } else {
    hash.update(`${contentType}\n${canonicalJson(request.body ?? null)}`);
  }
  return hash.digest('hex');
}

/** JSON with object keys sorted, so `{a, b}` and `{b, a}` are the same request. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Renews this request's lock. A lock Redis no longer has (it restarted without its data, failed over to a replica
 * that had not received it) is taken again, so a retry sent meanwhile waits rather than acts a second time.
 */
const RENEW_OR_RETAKE = `
local v = redis.call('GET', KEYS[1])
if not v then return redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2]) end
if cjson.decode(v).owner == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
/** Stores the answer where this request's lock is, or where Redis lost it; never over another request's record. */
const STORE_IF_OWNER_OR_FREE = `
local v = redis.call('GET', KEYS[1])
if not v or cjson.decode(v).owner == ARGV[1] then return redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) end
return 0`;
const DELETE_IF_OWNER = `
local v = redis.call('GET', KEYS[1])
if v and cjson.decode(v).owner == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
