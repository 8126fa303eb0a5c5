#!/usr/bin/env node
// Runs the whole suite: unit tests once, then every e2e test on SQLite and on PostgreSQL.
// TEST_DATABASES=sqlite (or postgres) narrows the run. Ends with one "N passed, N failed" line.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const databases = (process.env.TEST_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim()).filter(Boolean);
const extraArgs = process.argv.slice(2);
const reportDir = join('test-results');
rmSync(reportDir, { recursive: true, force: true });
mkdirSync(reportDir, { recursive: true });

const runs = [
  { label: 'unit', args: ['--project', 'unit'], env: {} },
  ...databases.map((db) => ({ label: `e2e (${db})`, args: ['--project', 'e2e'], env: { TEST_DB: db } })),
];

let passed = 0;
let failed = 0;
let skipped = 0;
let exitCode = 0;
for (const run of runs) {
  const report = join(reportDir, `${run.label.replace(/\W+/g, '-')}.json`);
  console.log(`\n=== ${run.label} ===`);
  const result = spawnSync('npx', ['vitest', 'run', ...run.args, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...extraArgs], {
    stdio: 'inherit',
    env: { ...process.env, ...run.env },
  });
  if (result.status !== 0) exitCode = 1;
  try {
    const summary = JSON.parse(readFileSync(report, 'utf8'));
    passed += summary.numPassedTests;
    failed += summary.numFailedTests;
    skipped += summary.numPendingTests + (summary.numTodoTests ?? 0);
    if (summary.numTotalTests === 0) exitCode = 1;
  } catch {
    exitCode = 1;
    console.error(`[tests] no report from ${run.label}: the run did not complete`);
  }
}
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(exitCode);
