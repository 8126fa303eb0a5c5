#!/usr/bin/env node
// Runs the whole suite in one vitest run: the unit tests, and every e2e test on SQLite and on PostgreSQL, side by side
// (one vitest project per database, e2e-sqlite and e2e-postgres: see vitest.config.ts, which also lists the files that
// run on the first database only). One run rather than one per database: the workers stay busy to the end instead of
// waiting twice for a run's last, longest files.
// TEST_DATABASES=sqlite (or postgres, or empty for the unit tests alone) narrows the run. Ends with one
// "N passed, N failed" line, after a list of the skipped tests, if any, each with its reason (the note of
// `ctx.skip(note)`), and a list of the failed tests with the first line of each failure: CI keeps only the end of
// the output.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const databases = (process.env.TEST_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim()).filter(Boolean);
const projects = ['unit', ...databases.map((db) => `e2e-${db}`)];
const extraArgs = process.argv.slice(2);
const summaryReporter = fileURLToPath(new URL('./suite-summary-reporter.mjs', import.meta.url));
const reportDir = join('test-results');
rmSync(reportDir, { recursive: true, force: true });
mkdirSync(reportDir, { recursive: true });
const summaryReport = join(reportDir, 'summary.json');

console.log(`\n=== ${projects.join(', ')} ===`);
const result = spawnSync(
  'npx',
  ['vitest', 'run', ...projects.flatMap((name) => ['--project', name]), '--reporter=default', `--reporter=${summaryReporter}`, ...extraArgs],
  // SUITE_DATABASES makes vitest.config.ts define one e2e project per database.
  { stdio: 'inherit', env: { ...process.env, SUITE_DATABASES: databases.join(','), SUITE_SUMMARY_REPORT: summaryReport } },
);
let exitCode = result.status === 0 ? 0 : 1;

const counts = { passed: 0, failed: 0, skipped: 0 };
const testsRunBy = new Map(projects.map((name) => [name, 0]));
const skippedTests = [];
const failedTests = [];
if (existsSync(summaryReport)) {
  const summary = JSON.parse(readFileSync(summaryReport, 'utf8'));
  for (const { project, file, tests, errors, state } of summary.files) {
    testsRunBy.set(project, (testsRunBy.get(project) ?? 0) + tests.length);
    for (const test of tests) {
      if (test.state === 'passed') counts.passed += 1;
      if (test.state === 'failed') {
        counts.failed += 1;
        failedTests.push(`[${project}] ${file} > ${test.name}: ${test.why}`);
      }
      if (test.state === 'skipped') {
        counts.skipped += 1;
        const why = test.note ?? (test.mode === 'todo' ? 'a todo' : 'no reason given: marked skip, or another test is marked only');
        skippedTests.push(`[${project}] ${file} > ${test.name}: ${why}`);
      }
    }
    // A file that fails outside its tests (an import error, a hook) reports no failed test, only its message.
    if (state === 'failed' && !tests.some((test) => test.state === 'failed')) {
      failedTests.push(`[${project}] ${file} > (the file): ${errors[0] ?? 'no message'}`);
    }
  }
  for (const error of summary.unhandledErrors) failedTests.push(`(outside any test): ${error}`);
  for (const [project, count] of testsRunBy) {
    if (count > 0) continue;
    exitCode = 1;
    console.error(`[tests] ${project} ran no test`);
  }
} else {
  exitCode = 1;
  console.error('[tests] no report: the run did not complete');
}
if (skippedTests.length > 0) console.log(`\nSkipped (${skippedTests.length}):\n${skippedTests.map((line) => `  ${line}`).join('\n')}`);
if (failedTests.length > 0) console.log(`\nFailed (${failedTests.length}):\n${failedTests.map((line) => `  ${line}`).join('\n')}`);
console.log(`\n${counts.passed} passed, ${counts.failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ''}`);
process.exit(exitCode);
