#!/usr/bin/env node
// Writes the OpenAPI document of the built service (dist/) to openapi.json at the repository root.
// Needs no database or Redis. `node scripts/openapi.mjs --check` exits 1 when openapi.json is stale.
import 'reflect-metadata';
import { readFileSync, writeFileSync } from 'node:fs';
import { generateOpenApiDocument } from '../dist/app.factory.js';
import { serializeOpenApiDocument } from '../dist/common/http/openapi.js';

const target = new URL('../openapi.json', import.meta.url);
const text = serializeOpenApiDocument(await generateOpenApiDocument());
if (process.argv.includes('--check')) {
  let committed = '';
  try {
    committed = readFileSync(target, 'utf8');
  } catch {}
  if (committed !== text) {
    console.error('openapi.json differs from what the code produces: run `npm run openapi` and commit it.');
    process.exit(1);
  }
  console.log('openapi.json is up to date.');
} else {
  writeFileSync(target, text);
  console.log(`Wrote openapi.json (${Object.keys(JSON.parse(text).paths).length} paths).`);
}
