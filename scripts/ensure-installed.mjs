#!/usr/bin/env node
// Installs the project's dependencies when they are missing or older than package-lock.json,
// so a fresh clone needs nothing but `npm start` / `npm test`.
import { execSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const marker = 'node_modules/.package-lock.json';
const hasLock = existsSync('package-lock.json');
const stale = !existsSync(marker) || (hasLock && statSync('package-lock.json').mtimeMs > statSync(marker).mtimeMs);
if (stale) {
  // `npm ci` installs exactly the lock (which lists every platform's optional packages) and never rewrites it.
  const command = hasLock ? 'npm ci --no-audit --no-fund' : 'npm install --no-audit --no-fund';
  console.error(`[setup] installing dependencies (${command}) ...`);
  execSync(command, { stdio: 'inherit' });
}
