#!/usr/bin/env node
// Installs the project's dependencies when they are missing or older than package-lock.json,
// so a fresh clone needs nothing but `npm start` / `npm test`.
import { execSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const marker = 'node_modules/.package-lock.json';
const stale = !existsSync(marker) || statSync('package-lock.json').mtimeMs > statSync(marker).mtimeMs;
if (stale) {
  console.error('[setup] installing dependencies (npm ci) ...');
  execSync('npm ci --no-audit --no-fund', { stdio: 'inherit' });
}
