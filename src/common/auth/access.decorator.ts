import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension, ApiResponse } from '@nestjs/swagger';
import { ErrorEnvelopeDoc, KEY_FAILURES_401, KEY_ROUTE_429 } from '../http/openapi.js';
import type { Scope } from './scopes.js';

export const ACCESS_METADATA = 'fss:access';

export type AccessRule = { kind: 'public' } | { kind: 'key'; scope: Scope | null; elevated: boolean };

/**
 * States what a route needs from the caller's API key: one decorator, read by the auth guards
 * and written into the OpenAPI document (security, 401/403/429 answers, `x-required-scope`).
 */
export function RequireScope(scope: Scope | null, options: { elevated?: boolean } = {}): MethodDecorator & ClassDecorator {
  const rule: AccessRule = { kind: 'key', scope, elevated: options.elevated ?? false };
  const refusals = [scope ? `lacks scope \`${scope}\`` : null, rule.elevated ? 'is not elevated' : null].filter(Boolean).join(', or ');
  return applyDecorators(
    SetMetadata(ACCESS_METADATA, rule),
    ApiBearerAuth('api-key'),
    ApiExtension('x-required-scope', scope ?? 'any'),
    ApiExtension('x-requires-elevated-key', rule.elevated),
    ApiResponse({ status: 400, description: 'invalid_request: malformed input; `details.fields` lists each problem.', type: ErrorEnvelopeDoc }),
    ApiResponse({ status: 401, description: KEY_FAILURES_401, type: ErrorEnvelopeDoc }),
    ApiResponse({ status: 403, description: `permission_denied: the key ${refusals || 'lacks the needed permission'}.`, type: ErrorEnvelopeDoc }),
    ApiResponse({
      status: 429,
      description: KEY_ROUTE_429,
      type: ErrorEnvelopeDoc,
    }),
  );
}

/** A route anyone may call without an API key (still rate limited per client IP unless throttling is skipped). */
export function Public(options: { takesInput?: boolean } = {}): MethodDecorator & ClassDecorator {
  const takesInput = options.takesInput ?? true;
  return applyDecorators(
    SetMetadata(ACCESS_METADATA, { kind: 'public' } satisfies AccessRule),
    // Marks the operation in OpenAPI as needing no API key (signed links, public share access).
    ApiExtension('x-public', true),
    ...(takesInput
      ? [
          ApiResponse({ status: 400, description: 'invalid_request: malformed input; `details.fields` lists each problem.', type: ErrorEnvelopeDoc }),
          ApiResponse({ status: 429, description: 'rate_limit_exceeded: too many requests from this client address; see Retry-After.', type: ErrorEnvelopeDoc }),
        ]
      : []),
  );
}
