#!/usr/bin/env node
// Runs the whole suite: unit tests once, then every e2e test on SQLite and on PostgreSQL (RUN_ONCE's files
// on the first of them only).
// TEST_DATABASES=sqlite (or postgres) narrows the run. Ends with one "N passed, N failed" line, after
// a list of the skipped tests, if any, each with its reason (the note of `ctx.skip(note)`), and a list of the
// failed tests with the first line of each failure: CI keeps only the end of the output, and a run's failures
// scroll out of it behind the next run.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const databases = (process.env.TEST_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim()).filter(Boolean);
const extraArgs = process.argv.slice(2);
const skippedTestsReporter = fileURLToPath(new URL('./skipped-tests-reporter.mjs', import.meta.url));
const reportDir = join('test-results');
rmSync(reportDir, { recursive: true, force: true });
mkdirSync(reportDir, { recursive: true });

// Files that run once, in the first database's run, because they test what does not depend on the database: the
// client libraries (the JavaScript library's tests, and the Python, PHP and Ruby libraries' conformance) test the
// HTTP interface, which the server's own e2e tests cover on both databases; Swagger UI is a page in a browser; the
// test command's own test runs throwaway projects. The concurrent-quota file starts servers on both databases
// itself, whatever TEST_DB says. The start-up, configuration and argument files test refusals that come before the
// database matters (a bad variable, an unreachable Redis, a port in use, a command line the CLI cannot parse), and
// PORT=0 the port a server announces. Together about seven minutes of worker time saved.
// `TEST_DB=postgres npx vitest run clients/conformance` still runs the conformance on PostgreSQL.
const RUN_ONCE = [
  'clients/conformance/**',
  'clients/js/test/**',
  'test/e2e/files/concurrent-quota.e2e-spec.ts',
  'test/e2e/foundation/swagger-ui.e2e-spec.ts',
  'test/e2e/foundation/test-command.e2e-spec.ts',
  'test/e2e/foundation/start-up.e2e-spec.ts',
  'test/e2e/foundation/start-up-redis.e2e-spec.ts',
  'test/e2e/foundation/configuration.e2e-spec.ts',
  'test/e2e/foundation/cli-arguments.e2e-spec.ts',
  'test/e2e/foundation/port-zero.e2e-spec.ts',
];
const runs = [
  { label: 'unit', args: ['--project', 'unit'], env: {} },
  ...databases.map((db, index) => ({
    label: `e2e (${db})`,
    args: ['--project', 'e2e', ...(index > 0 ? RUN_ONCE.flatMap((glob) => ['--exclude', glob]) : [])],
    env: { TEST_DB: db },
  })),
];

let passed = 0;
let failed = 0;
let skipped = 0;
let exitCode = 0;
const skippedTests = [];
const failedTests = [];
for (const run of runs) {
  const report = join(reportDir, `${run.label.replace(/\W+/g, '-')}.json`);
  const skippedReport = join(reportDir, `${run.label.replace(/\W+/g, '-')}.skipped.json`);
  console.log(`\n=== ${run.label} ===`);
  const reporters = ['--reporter=default', '--reporter=json', `--outputFile.json=${report}`, `--reporter=${skippedTestsReporter}`];
  const result = spawnSync('npx', ['vitest', 'run', ...run.args, ...reporters, ...extraArgs], {
    stdio: 'inherit',
    env: { ...process.env, ...run.env, SKIPPED_TESTS_REPORT: skippedReport },
  });
  if (existsSync(skippedReport)) {
    for (const test of JSON.parse(readFileSync(skippedReport, 'utf8'))) skippedTests.push({ ...test, run: run.label });
  }
  if (result.status !== 0) exitCode = 1;
  try {
    const summary = JSON.parse(readFileSync(report, 'utf8'));
    passed += summary.numPassedTests;
    failed += summary.numFailedTests;
    skipped += summary.numPendingTests + (summary.numTodoTests ?? 0);
    if (summary.numTotalTests === 0) exitCode = 1;
    for (const file of summary.testResults ?? []) {
      const path = file.name.replace(`${process.cwd()}/`, '');
      const failures = (file.assertionResults ?? []).filter((test) => test.status === 'failed');
      for (const test of failures) failedTests.push({ run: run.label, path, name: test.fullName, why: firstLine(test.failureMessages) });
      // A file that fails outside its tests (an import error, a hook) reports no failed test, only its message.
      if (failures.length === 0 && file.status === 'failed') failedTests.push({ run: run.label, path, name: '(the file)', why: firstLine([file.message]) });
    }
  } catch {
    exitCode = 1;
    console.error(`[tests] no report from ${run.label}: the run did not complete`);
  }
}
if (skippedTests.length > 0) {
  console.log(`\nSkipped (${skippedTests.length}):`);
  for (const test of skippedTests) {
    const why = test.note ?? (test.mode === 'todo' ? 'a todo' : 'no reason given: marked skip, or another test is marked only');
    console.log(`  [${test.run}] ${test.file} > ${test.name}: ${why}`);
  }
}
if (failedTests.length > 0) {
  console.log(`\nFailed (${failedTests.length}):`);
  for (const test of failedTests) console.log(`  [${test.run}] ${test.path} > ${test.name}: ${test.why}`);
}
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(exitCode);

function firstLine(messages) {
  const text = (messages ?? []).find((message) => message && message.trim()) ?? 'no message';
  // Strip colours and keep the one line that says what went wrong.
  return text.replace(/\u001b\[[0-9;]*m/g, '').trim().split('\n')[0].slice(0, 300);
}
