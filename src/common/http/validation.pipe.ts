import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { DECORATORS } from '@nestjs/swagger';
import { getMetadataStorage } from 'class-validator';
import { FieldProblem, InvalidRequest } from '../errors/api-error.js';
import { NOT_A_JSON_OBJECT } from './request-body.js';

/** Constraints on a value's type, checked in this order: once one fails, the value's other constraints say nothing useful. */
const TYPE_CONSTRAINTS = ['isArray', 'isObject', 'isString', 'isInt', 'isNumber', 'isBoolean'];

/**
 * What to tell the client about one field: that it is missing, or that it has the wrong type, or, only when its
 * type is right, every rule it breaks. Without this, `{}` for a required list listed five rules of its items and size.
 */
function relevantMessages(error: ValidationError): string[] {
  const constraints = error.constraints ?? {};
  if (error.value === undefined && Object.keys(constraints).length > 0) return ['is required'];
  const failedType = TYPE_CONSTRAINTS.find((name) => constraints[name] !== undefined);
  return failedType ? [constraints[failedType]!] : Object.values(constraints);
}

function flatten(errors: ValidationError[], parent = ''): FieldProblem[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = relevantMessages(error).map((message) => ({
      field,
      // class-validator names the property itself; with forbidNonWhitelisted it says "property x should not exist".
      message: message.startsWith('property ') ? 'is not allowed' : message.replace(new RegExp(`^${error.property} `), ''),
    }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

/**
 * Whitelisting validation for every input, failing with invalid_request and `details.fields`.
 * A query parameter given twice (`page=1&page=2`) is refused rather than silently picking one.
 */
export class ApiValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      forbidUnknownValues: true,
      exceptionFactory: (errors) => InvalidRequest.fields(flatten(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // Custom parameters (the caller, the uploaded file) come from the service itself, not from the client.
    if (metadata.type === 'custom') return super.transform(value, metadata);
    // A field is named as class-validator names it: `name`, `page`, or the path parameter's own name.
    const path = metadata.data ?? '';
    // PostgreSQL cannot store NUL in text, and no name, id or label of this API needs one.
    const withNul = findNulCharacters(value, path);
    if (withNul.length > 0) {
      throw InvalidRequest.fields(withNul.map((field) => ({ field, message: 'must not contain NUL characters' })));
    }
    // Whitelisting cannot see these: they name members every object inherits, and class-transformer would assign them.
    const reserved = findReservedKeys(value, path);
    if (reserved.length > 0) throw InvalidRequest.fields(reserved.map((field) => ({ field, message: 'is not allowed' })));
    if (metadata.type === 'body' && metadata.metatype) {
      // Every JSON body of this API is one object; class-transformer would read a list as a list of them.
      if (Array.isArray(value)) throw new InvalidRequest(NOT_A_JSON_OBJECT);
      const nulls = findForbiddenNulls(value, metadata.metatype, '');
      if (nulls.length > 0) throw InvalidRequest.fields(nulls.map((field) => ({ field, message: 'must not be null' })));
    }
    if (metadata.type === 'query' && value !== null && typeof value === 'object') {
      const repeated = Object.entries(value).filter(([, v]) => Array.isArray(v));
      if (repeated.length > 0) {
        throw InvalidRequest.fields(repeated.map(([field]) => ({ field, message: 'must be given at most once' })));
      }
    }
    return super.transform(value, metadata);
  }
}

type Class = abstract new (...args: never[]) => unknown;
interface DocumentedProperty {
  nullable?: boolean;
  type?: unknown;
}

/**
 * `@IsOptional()` lets `null` through, but only the fields documented `nullable: true` in OpenAPI may be null
 * (e.g. `folder_id: null` moves a file to the root); the OpenAPI document is the one list of them. Nested
 * request objects are followed through their documented type.
 */
function findForbiddenNulls(value: unknown, metatype: Class, path: string): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  const validated = new Set(getMetadataStorage().getTargetValidationMetadatas(metatype as never, '', true, false).map((m) => m.propertyName));
  return Object.entries(value).flatMap(([key, child]) => {
    const field = path ? `${path}.${key}` : key;
    const documented = Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES, metatype.prototype as object, key) as DocumentedProperty | undefined;
    if (!documented && !validated.has(key)) return []; // an unknown field: refused as "is not allowed"
    if (child === null) return documented?.nullable === true ? [] : [field];
    const nestedType = typeof documented?.type === 'function' && documented.type.prototype ? (documented.type as Class) : undefined;
    if (!nestedType || nestedType === String || nestedType === Number || nestedType === Boolean) return [];
    return Array.isArray(child) ? child.flatMap((item, i) => findForbiddenNulls(item, nestedType, `${field}[${i}]`)) : findForbiddenNulls(child, nestedType, field);
  });
}

const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function findReservedKeys(value: unknown, path: string): string[] {
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const field = path ? `${path}.${key}` : key;
    return RESERVED_KEYS.has(key) ? [field] : findReservedKeys(child, field);
  });
}

function findNulCharacters(value: unknown, path: string, depth = 0): string[] {
  if (typeof value === 'string') return value.includes('\u0000') ? [path || 'body'] : [];
  if (depth > 20 || value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const own = key.includes('\u0000') ? [path ? `${path}.${key}` : key] : [];
    return [...own, ...findNulCharacters(child, path ? `${path}.${key}` : key, depth + 1)];
  });
}
