import { applyDecorators, Type } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiPropertyOptional, ApiResponse, ApiResponseSchemaHost, getSchemaPath } from '@nestjs/swagger';

type Schema = ApiResponseSchemaHost['schema'];
import { Pagination } from './envelope.js';

export class FieldProblemDoc {
  @ApiProperty({ example: 'per_page' }) field: string;
  @ApiProperty({ example: 'must not be greater than 100' }) message: string;
}

export class ErrorBodyDoc {
  @ApiProperty({
    example: 'invalid_request',
    description:
      'invalid_request (400), authentication_failed (401), permission_denied (403), not_found (404), rate_limit_exceeded (429), ' +
      'file_too_large and storage_exceeded (413), share_expired (410), password_required (401), file_infected (403), service_unavailable (503, with Retry-After), internal_error (500)',
  })
  code: string;

  @ApiProperty({ example: 'Request validation failed: per_page: must not be greater than 100' }) message: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Machine-readable specifics, e.g. `fields` (list of {field, message}) for validation failures.',
  })
  details?: Record<string, unknown>;
}

/** The failure envelope: `{success: false, error: {code, message, details?}}`. */
export class ErrorEnvelopeDoc {
  @ApiProperty({ example: false }) success: boolean;
  @ApiProperty({ type: ErrorBodyDoc }) error: ErrorBodyDoc;
}

/** Documents a success answer as `{success: true, data: <model>}` (or a list with pagination). */
export function ApiEnvelope(model: Type<unknown> | null, options: { status?: number; description?: string; list?: boolean } = {}) {
  const data: Schema = model === null ? { type: 'object' } : options.list ? { type: 'array', items: { $ref: getSchemaPath(model) } } : { $ref: getSchemaPath(model) };
  const properties: Record<string, Schema> = { success: { type: 'boolean', example: true }, data };
  if (options.list) properties.pagination = { $ref: getSchemaPath(Pagination) };
  return applyDecorators(
    ApiExtraModels(...([model, Pagination].filter(Boolean) as Type<unknown>[])),
    ApiResponse({
      status: options.status ?? 200,
      description: options.description ?? 'Success',
      schema: { type: 'object', required: ['success', 'data'], properties },
    }),
  );
}

/** Documents error answers of a route with the error envelope. */
export function ApiErrors(...answers: Array<[status: number, description: string]>) {
  return applyDecorators(...answers.map(([status, description]) => ApiResponse({ status, description, type: ErrorEnvelopeDoc })));
}
