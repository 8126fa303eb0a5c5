import { ConnectionError, FileStorageError, InvalidRequestError, InvalidResponseError, TimeoutError, errorFromResponse } from './errors.js';

export interface FileStorageOptions {
  /** An API key of the account (`Authorization: Bearer <key>`). */
  apiKey: string;
  /**
   * The server's address, e.g. `https://files.example.com`, with the path it is served under if any
   * (`https://example.com/storage`): requests go to `<baseUrl>/v1/...`.
   */
  baseUrl: string;
  /**
   * How long to wait for an answer's headers, per attempt, and then between any two reads of its body (a download,
   * a JSON answer): a body that stops arriving for this long fails with a TimeoutError. Default 60 000 ms.
   */
  timeoutMs?: number;
  /** Retries after 429, 502, 503, 504, 409 `idempotency_key_in_use` and network errors. Default 2. */
  maxRetries?: number;
  /** Files of at least this many bytes go through the resumable tus endpoint. Default 64 MiB. */
  resumableThresholdBytes?: number;
  /** Size of each tus PATCH. Default 8 MiB. */
  resumableChunkBytes?: number;
  /**
   * How long a resumable upload goes on retrying after failures in a row (network errors, 423 while the server still
   * holds the upload for a request that was cut off, 429, 5xx) before it gives up. Default 80 000 ms.
   */
  resumableRetryMs?: number;
  /** A fetch implementation; the platform's by default. */
  fetch?: typeof fetch;
}

export interface CallOptions {
  /** Cancels the call, its retries included. */
  signal?: AbortSignal;
}

/** A request body that can be produced again for a retry, or not (a stream given by the caller). */
export interface RequestBody {
  open(): BodyInit;
  contentType?: string;
  replayable: boolean;
}

export interface RequestSpec extends CallOptions {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'HEAD';
  path: string;
  query?: object;
  json?: unknown;
  body?: RequestBody;
  headers?: Record<string, string>;
  /** Public share routes need no key. */
  anonymous?: boolean;
  /** False where the caller handles failures itself (tus PATCH resumes from HEAD instead). */
  retry?: boolean;
}

const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);
const MAX_BACKOFF_MS = 8_000;
const MAX_RETRY_AFTER_SECONDS = 120;

/** Sends requests: authentication, timeouts, retries with backoff and the automatic Idempotency-Key of POSTs. */
export class HttpClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  private readonly apiKey: string;
  private readonly fetchImpl: typeof fetch;

  constructor(options: FileStorageOptions) {
    if (!options.apiKey) throw new TypeError('FileStorage needs an apiKey.');
    if (!options.baseUrl) throw new TypeError('FileStorage needs a baseUrl.');
    if (!ABSOLUTE_URL.test(options.baseUrl)) throw new TypeError(`baseUrl must be an http(s) URL such as https://files.example.com, not ${options.baseUrl}.`);
    this.apiKey = options.apiKey;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /**
   * Where a request goes: a path of the API (`/v1/...`) under the base URL, its path prefix kept; an absolute URL the
   * server gave (a tus Location) as it is.
   */
  url(path: string, query?: object): string {
    const url = new URL(ABSOLUTE_URL.test(path) ? path : this.baseUrl + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
    }
    return url.toString();
  }

  /** The JSON envelope's `data` of a successful answer. */
  async data<T>(spec: RequestSpec): Promise<T> {
    return ((await this.envelope<{ data: T }>(spec)).data);
  }

  /** The JSON envelope of a successful answer; a body that is not one raises an InvalidResponseError. */
  async envelope<T>(spec: RequestSpec): Promise<T> {
    const response = await this.send(spec);
    const request = requestLabel(spec.method, spec.path);
    const body = await this.text(response, `The answer to ${request}`, spec.signal);
    let envelope: unknown;
    try {
      envelope = JSON.parse(body);
    } catch {
      throw invalidResponse(request, response, body);
    }
    if (typeof envelope !== 'object' || envelope === null || Array.isArray(envelope)) throw invalidResponse(request, response, body);
    return envelope as T;
  }

  /**
   * An answer's body as a stream, read as it arrives: no bytes for `timeoutMs` fail it with a TimeoutError, a
   * connection cut before its end with a ConnectionError (instead of hanging, or the fetch implementation's own error).
   */
  body(response: Response, what: string, signal?: AbortSignal): ReadableStream<Uint8Array> {
    return readWithin(response, what, this.timeoutMs, signal);
  }

  /** An answer's whole body as text, read like `body()`. */
  async text(response: Response, what: string, signal?: AbortSignal): Promise<string> {
    const decoder = new TextDecoder();
    let text = '';
    const reader = this.body(response, what, signal).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return text + decoder.decode();
      text += decoder.decode(value, { stream: true });
    }
  }

  /**
   * One logical request: retried on 429 (after Retry-After), 502/503/504 and network errors, with exponential
   * backoff, as long as its body can be sent again. Every attempt of a POST carries the same Idempotency-Key,
   * so a retry after a lost answer replays the first result instead of acting twice; one that arrives while the
   * first attempt still runs is answered 409 `idempotency_key_in_use` and is sent again after Retry-After.
   */
  async send(spec: RequestSpec): Promise<Response> {
    const headers: Record<string, string> = { Accept: 'application/json', ...spec.headers };
    if (!spec.anonymous) headers.Authorization = `Bearer ${this.apiKey}`;
    if (spec.method === 'POST' && !hasHeader(headers, 'idempotency-key')) headers['Idempotency-Key'] = crypto.randomUUID();
    if (spec.json !== undefined) headers['Content-Type'] = 'application/json';
    if (spec.body?.contentType) headers['Content-Type'] = spec.body.contentType;
    const url = this.url(spec.path, spec.query);
    const request = requestLabel(spec.method, spec.path);
    refuseUnsendableHeaders(headers, request);
    const maxRetries = spec.retry === false || (spec.body && !spec.body.replayable) ? 0 : this.maxRetries;

    for (let attempt = 0; ; attempt++) {
      spec.signal?.throwIfAborted();
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), this.timeoutMs);
      const signal = spec.signal ? AbortSignal.any([spec.signal, timeout.signal]) : timeout.signal;
      let response: Response;
      try {
        const body = spec.json !== undefined ? JSON.stringify(spec.json) : spec.body?.open();
        // `duplex` lets Node's fetch send a stream body; browsers that stream request bodies need it too.
        response = await this.fetchImpl(url, { method: spec.method, headers, body, signal, duplex: 'half' } as RequestInit);
      } catch (cause) {
        clearTimeout(timer);
        if (spec.signal?.aborted) throw spec.signal.reason;
        const error = timeout.signal.aborted
          ? new TimeoutError({ code: 'timeout', message: `No answer from ${request} within ${this.timeoutMs} ms.` }, { cause })
          : new ConnectionError({ code: 'connection_error', message: `${request} failed: ${describe(cause)}` }, { cause });
        if (attempt >= maxRetries) throw error;
        await sleep(backoffMs(attempt), spec.signal);
        continue;
      }
      clearTimeout(timer);
      if (response.ok) return response;
      // A body that is cut off or stalls still leaves the status to go by.
      const body = await this.text(response, `The answer to ${request}`, spec.signal).catch((error: unknown) => {
        if (error instanceof FileStorageError) return '';
        throw error;
      });
      const error = await errorFromResponse(response, body);
      // A 409 idempotency_key_in_use: the first request with this key still runs; once it ends, the key gets its answer.
      const retryable = RETRYABLE_STATUSES.has(response.status) || (response.status === 409 && error.code === 'idempotency_key_in_use');
      // Asked to wait longer than the client waits by itself, a retry could only be refused again: the error (with its
      // retryAfter) goes to the caller at once, to schedule it.
      const { retryAfter } = error;
      if (attempt < maxRetries && retryable && (retryAfter === undefined || retryAfter <= MAX_RETRY_AFTER_SECONDS)) {
        await sleep(retryAfter !== undefined ? retryAfter * 1000 : backoffMs(attempt), spec.signal);
        continue;
      }
      throw error;
    }
  }
}

const ABSOLUTE_URL = /^https?:\/\//i;
const BODY_EXCERPT_CHARS = 200;

/**
 * fetch refuses a header value that is not ISO-8859-1 text without NUL or line breaks with a TypeError before anything is
 * sent, which would otherwise be taken for a failed connection and retried; such a request is refused here, naming
 * the header (its value may be a secret, so it is not quoted).
 */
function refuseUnsendableHeaders(headers: Record<string, string>, request: string): void {
  for (const [name, value] of Object.entries(headers)) {
    if (!/[^\x01-\x09\x0b\x0c\x0e-\xff]/.test(value)) continue;
    throw new InvalidRequestError({
      code: 'invalid_request',
      message: `${request} not sent: the ${name} header's value has characters HTTP headers cannot carry (only ISO-8859-1 text without NUL or line breaks).`,
    });
  }
}

/** A request as error messages name it: method and path, the query left out (a signed download link's signature). */
function requestLabel(method: string, pathOrUrl: string): string {
  const queryAt = pathOrUrl.indexOf('?');
  return `${method} ${queryAt < 0 ? pathOrUrl : `${pathOrUrl.slice(0, queryAt)}?<redacted>`}`;
}

/**
 * The error for an answer whose body is not the JSON envelope expected: its status, its content type and the start of
 * its body, so that a captive portal's or a proxy's page is recognised.
 */
function invalidResponse(request: string, response: Response, body: string): InvalidResponseError {
  const excerpt = body.replace(/\s+/g, ' ').trim();
  const quoted = excerpt.length > BODY_EXCERPT_CHARS ? `${excerpt.slice(0, BODY_EXCERPT_CHARS)}…` : excerpt;
  const type = response.headers.get('content-type') ?? 'no content type';
  return new InvalidResponseError({
    code: 'invalid_response',
    message: `${request}: the server answered ${response.status} with a body that is not the JSON expected (${type}): ${JSON.stringify(quoted)}`,
    status: response.status,
    requestId: response.headers.get('x-request-id') ?? undefined,
    headers: response.headers,
  });
}

/** 0.5 s, 1 s, 2 s… with full jitter, at most 8 s. */
export function backoffMs(attempt: number): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, 500 * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * An answer's body read as a stream. A connection cut before its end fails it with a ConnectionError, as a request
 * without an answer does, instead of the fetch implementation's own error (Node's `TypeError: terminated`); no bytes
 * for `timeoutMs` fail it with a TimeoutError and close the connection, as the wait for the headers does.
 */
function readWithin(response: Response, what: string, timeoutMs: number, signal?: AbortSignal): ReadableStream<Uint8Array> {
  const reader = response.body?.getReader();
  let received = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!reader) return controller.close();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stalled = new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), timeoutMs)));
      let chunk: ReadableStreamReadResult<Uint8Array> | 'stalled';
      try {
        chunk = await Promise.race([reader.read(), stalled]);
      } catch (cause) {
        if (signal?.aborted) throw cause;
        throw new ConnectionError({ code: 'connection_error', message: `${what} was cut off after ${received} bytes: ${describe(cause)}` }, { cause });
      } finally {
        clearTimeout(timer);
      }
      if (chunk === 'stalled') {
        const error = new TimeoutError({ code: 'timeout', message: `${what} stalled: no bytes for ${timeoutMs} ms after ${received} bytes.` });
        reader.cancel(error).catch(() => undefined);
        throw error;
      }
      if (chunk.done) return controller.close();
      received += chunk.value.byteLength;
      controller.enqueue(chunk.value);
    },
    cancel: (reason) => reader?.cancel(reason),
  });
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((key) => key.toLowerCase() === name);
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause;
    return inner instanceof Error ? `${cause.message} (${inner.message})` : cause.message;
  }
  return String(cause);
}
