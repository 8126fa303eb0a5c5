import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { OpenAPIObject } from '@nestjs/swagger';
import { generateOpenApiDocument } from '../../app.factory.js';
import { serializeOpenApiDocument } from './openapi.js';

const committedPath = new URL('../../../openapi.json', import.meta.url);

describe('openapi.json, the API contract', () => {
  let produced: OpenAPIObject;
  beforeAll(async () => {
    produced = await generateOpenApiDocument();
  }, 60_000);

  it('is exactly what the code produces (regenerate with `npm run openapi`)', () => {
    expect(readFileSync(committedPath, 'utf8')).toBe(serializeOpenApiDocument(produced));
  });

  it('gives every operation a unique camelCase operationId and one tag', () => {
    const operations = Object.entries(produced.paths).flatMap(([path, methods]) =>
      Object.entries(methods as Record<string, { operationId?: string; tags?: string[] }>).map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, op })),
    );
    expect(operations.length).toBeGreaterThan(30);
    const ids = operations.map(({ op }) => op.operationId);
    for (const { where, op } of operations) {
      expect(op.operationId, where).toMatch(/^[a-z][a-zA-Z0-9]*$/);
      expect(op.tags, where).toHaveLength(1);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('describes every error answer with the error envelope and the codes of its status', () => {
    const notFound = produced.paths['/v1/files/{file_id}'].get!.responses['404'] as { content: Record<string, { schema: { $ref: string } }> };
    expect(notFound.content['application/json'].schema.$ref).toBe('#/components/schemas/ErrorEnvelope404');
    expect(produced.components!.schemas!.ErrorEnvelope404).toMatchObject({ properties: { error: { properties: { code: { enum: ['not_found'] } } } } });
  });
});
