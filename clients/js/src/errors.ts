/** What the server answered in its error envelope, plus what the client knows of the exchange. */
export interface FileStorageErrorInit {
  code: string;
  message: string;
  status?: number;
  details?: Record<string, unknown>;
  requestId?: string;
  headers?: Headers;
}

/** Every error the client raises for an answer of the server, or for a failed exchange with it. */
export class FileStorageError extends Error {
  override name = 'FileStorageError';
  /** The envelope's error code, e.g. `not_found`; `connection_error` or `timeout` when no answer arrived. */
  readonly code: string;
  /** The HTTP status, or undefined when no answer arrived. */
  readonly status: number | undefined;
  readonly details: Record<string, unknown> | undefined;
  /** The X-Request-Id of the answer: quote it when asking for support. */
  readonly requestId: string | undefined;
  readonly headers: Headers | undefined;
  /**
   * Seconds the server asked to wait before trying again (its Retry-After), on a 429, a 503 or a 409
   * `idempotency_key_in_use`: raised at once when longer than the client waits by itself (120 s), to schedule the retry.
   */
  readonly retryAfter: number | undefined;

  constructor(init: FileStorageErrorInit, options?: { cause?: unknown }) {
    super(init.message, options);
    this.code = init.code;
    this.status = init.status;
    this.details = init.details;
    this.requestId = init.requestId;
    this.headers = init.headers;
    this.retryAfter = parseRetryAfter(init.headers?.get('retry-after') ?? null);
  }
}

export class InvalidRequestError extends FileStorageError {
  override name = 'InvalidRequestError';
}
export class AuthenticationError extends FileStorageError {
  override name = 'AuthenticationError';
}
export class PermissionDeniedError extends FileStorageError {
  override name = 'PermissionDeniedError';
}
export class NotFoundError extends FileStorageError {
  override name = 'NotFoundError';
}
/** 409, or 423: a resumable upload is held by another request. */
export class ConflictError extends FileStorageError {
  override name = 'ConflictError';
}
/** The same Idempotency-Key was sent with a different request (422), or while its first request still runs (409, once the retries have run out). */
export class IdempotencyError extends FileStorageError {
  override name = 'IdempotencyError';
}
/** 429: too many requests; `retryAfter` says how many seconds to wait. */
export class RateLimitError extends FileStorageError {
  override name = 'RateLimitError';
}
export class FileTooLargeError extends FileStorageError {
  override name = 'FileTooLargeError';
  get fileSize(): number | undefined {
    return this.details?.file_size as number | undefined;
  }
  get maxSize(): number | undefined {
    return this.details?.max_size as number | undefined;
  }
  get plan(): string | undefined {
    return this.details?.plan as string | undefined;
  }
}
export class StorageExceededError extends FileStorageError {
  override name = 'StorageExceededError';
  get currentUsage(): number | undefined {
    return this.details?.current_usage as number | undefined;
  }
  get storageLimit(): number | undefined {
    return this.details?.storage_limit as number | undefined;
  }
  get requiredSpace(): number | undefined {
    return this.details?.required_space as number | undefined;
  }
}
export class ShareExpiredError extends FileStorageError {
  override name = 'ShareExpiredError';
}
/** The feed cursor points before events that were trimmed (older than the retention); start again without `after`. */
export class CursorExpiredError extends FileStorageError {
  override name = 'CursorExpiredError';
}
export class PasswordRequiredError extends FileStorageError {
  override name = 'PasswordRequiredError';
}
export class FileInfectedError extends FileStorageError {
  override name = 'FileInfectedError';
}
export class ServiceUnavailableError extends FileStorageError {
  override name = 'ServiceUnavailableError';
}
export class InternalServerError extends FileStorageError {
  override name = 'InternalServerError';
}
/** No answer arrived: the connection failed or was cut. */
export class ConnectionError extends FileStorageError {
  override name = 'ConnectionError';
}
/** No answer arrived within the client's `timeoutMs`, or its body stopped arriving for that long. */
export class TimeoutError extends FileStorageError {
  override name = 'TimeoutError';
}
/**
 * An answer that is not what the API sends: a body that is not the JSON expected (a captive portal's or a proxy's HTML
 * page), a tus creation without Location. `message` quotes the start of the body.
 */
export class InvalidResponseError extends FileStorageError {
  override name = 'InvalidResponseError';
}

const ERROR_CLASSES: Record<string, new (init: FileStorageErrorInit) => FileStorageError> = {
  invalid_request: InvalidRequestError,
  authentication_failed: AuthenticationError,
  permission_denied: PermissionDeniedError,
  not_found: NotFoundError,
  conflict: ConflictError,
  idempotency_key_in_use: IdempotencyError,
  idempotency_key_reused: IdempotencyError,
  rate_limit_exceeded: RateLimitError,
  file_too_large: FileTooLargeError,
  storage_exceeded: StorageExceededError,
  share_expired: ShareExpiredError,
  cursor_expired: CursorExpiredError,
  password_required: PasswordRequiredError,
  file_infected: FileInfectedError,
  service_unavailable: ServiceUnavailableError,
  internal_error: InternalServerError,
};

/** The typed error for a failed answer, from its error envelope when it has one; `body` when it was read already. */
export async function errorFromResponse(response: Response, body?: string): Promise<FileStorageError> {
  const envelope = errorEnvelope(body ?? (await response.text().catch(() => '')));
  const code = envelope?.code ?? codeForStatus(response.status);
  const init: FileStorageErrorInit = {
    code,
    message: envelope?.message ?? `HTTP ${response.status} ${response.statusText}`.trim(),
    status: response.status,
    details: envelope?.details,
    requestId: response.headers.get('x-request-id') ?? undefined,
    headers: response.headers,
  };
  const ErrorClass = ERROR_CLASSES[code] ?? FileStorageError;
  return new ErrorClass(init);
}

/** The `error` of an error envelope; undefined for any other body (a proxy's HTML page, nothing). */
function errorEnvelope(body: string): { code?: string; message?: string; details?: Record<string, unknown> } | undefined {
  try {
    const parsed = JSON.parse(body) as { error?: unknown } | null;
    return typeof parsed?.error === 'object' && parsed.error !== null ? parsed.error : undefined;
  } catch {
    return undefined;
  }
}

/** Answers without an envelope (a proxy's 502, say) still get the class their status implies. */
function codeForStatus(status: number): string {
  const byStatus: Record<number, string> = {
    400: 'invalid_request',
    401: 'authentication_failed',
    403: 'permission_denied',
    404: 'not_found',
    409: 'conflict',
    410: 'not_found',
    // A HEAD's answer has no body: 423 is a resumable upload held by another request.
    423: 'conflict',
    429: 'rate_limit_exceeded',
    503: 'service_unavailable',
  };
  return byStatus[status] ?? (status >= 500 ? 'internal_error' : 'http_error');
}

/** Retry-After in seconds, from either of its forms (delta-seconds or an HTTP date). */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}
