import { HttpStatus } from '@nestjs/common';

export type ErrorCode =
  | 'invalid_request'
  | 'authentication_failed'
  | 'permission_denied'
  | 'not_found'
  | 'rate_limit_exceeded'
  | 'storage_exceeded'
  | 'file_too_large'
  | 'share_expired'
  | 'cursor_expired'
  | 'password_required'
  | 'file_infected'
  | 'conflict'
  | 'idempotency_key_in_use'
  | 'idempotency_key_reused'
  | 'service_unavailable'
  | 'internal_error';

export interface FieldProblem {
  field: string;
  message: string;
}

/**
 * An error the client is meant to see: it carries the envelope's code, message and details and
 * the HTTP status that goes with the code. Thrown anywhere, rendered by the global filter.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export class InvalidRequest extends ApiError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(HttpStatus.BAD_REQUEST, 'invalid_request', message, details);
  }

  static fields(fields: FieldProblem[]): InvalidRequest {
    const summary = fields.map((f) => `${f.field}: ${f.message}`).join('; ');
    return new InvalidRequest(`Request validation failed: ${summary}`, { fields });
  }
}

export class AuthenticationFailed extends ApiError {
  constructor(message = 'A valid API key is required: send "Authorization: Bearer <API_KEY>".') {
    super(HttpStatus.UNAUTHORIZED, 'authentication_failed', message, undefined, { 'WWW-Authenticate': 'Bearer' });
  }
}

export class PermissionDenied extends ApiError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(HttpStatus.FORBIDDEN, 'permission_denied', message, details);
  }
}

export class NotFound extends ApiError {
  constructor(resource: string, id?: string) {
    super(HttpStatus.NOT_FOUND, 'not_found', id === undefined ? `${resource} not found.` : `${capitalize(resource)} ${id} not found.`);
  }
}

export class RateLimitExceeded extends ApiError {
  constructor(retryAfterSeconds: number, limit: number) {
    super(
      HttpStatus.TOO_MANY_REQUESTS,
      'rate_limit_exceeded',
      `Rate limit of ${limit} requests per minute exceeded; retry in ${retryAfterSeconds} s.`,
      { limit, retry_after: retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

export class FileTooLarge extends ApiError {
  constructor(fileSize: number, maxSize: number, plan: string) {
    super(HttpStatus.PAYLOAD_TOO_LARGE, 'file_too_large', `The file exceeds the ${plan} plan's maximum size of ${maxSize} bytes.`, {
      file_size: fileSize,
      max_size: maxSize,
      plan,
    });
  }
}

export class StorageExceeded extends ApiError {
  constructor(currentUsage: number, storageLimit: number, requiredSpace: number) {
    super(HttpStatus.PAYLOAD_TOO_LARGE, 'storage_exceeded', 'The upload does not fit in the remaining storage quota.', {
      current_usage: currentUsage,
      storage_limit: storageLimit,
      required_space: requiredSpace,
    });
  }
}

export class ShareExpired extends ApiError {
  constructor() {
    super(HttpStatus.GONE, 'share_expired', 'This share link has expired.');
  }
}

export class CursorExpired extends ApiError {
  constructor(retentionDays: number) {
    super(
      HttpStatus.GONE,
      'cursor_expired',
      `This cursor points before events that were trimmed (events are kept ${retentionDays} days); start again without \`after\` and resynchronise.`,
      { retention_days: retentionDays },
    );
  }
}

export class PasswordRequired extends ApiError {
  constructor() {
    super(HttpStatus.UNAUTHORIZED, 'password_required', 'This share link needs the right password in the X-Share-Password header.');
  }
}

export class FileInfected extends ApiError {
  constructor() {
    super(HttpStatus.FORBIDDEN, 'file_infected', 'The file was found infected and is quarantined.');
  }
}

export class ServiceUnavailable extends ApiError {
  constructor(message: string) {
    super(HttpStatus.SERVICE_UNAVAILABLE, 'service_unavailable', message, undefined, { 'Retry-After': '5' });
  }
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
