#!/usr/bin/env node
// Installs the project's dependencies when they are missing or older than package-lock.json,
// so a fresh clone needs nothing but `npm start` / `npm test`.
import { execSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const marker = 'node_modules/.package-lock.json';
const stale = !existsSync(marker) || statSync('package-lock.json').mtimeMs > statSync(marker).mtimeMs;
if (stale) {
  // `npm install` honours package-lock.json; `npm ci` is avoided because npm 11 refuses lock files
  // that leave out other platforms' optional packages (@swc/core-*, msgpackr-extract-*), as its own do.
  console.error('[setup] installing dependencies (npm install) ...');
  execSync('npm install --no-audit --no-fund', { stdio: 'inherit' });
}
