// A vitest reporter that writes the run's outcome, test by test and with each test's project (unit, e2e-sqlite,
// e2e-postgres), to the JSON file named by SUITE_SUMMARY_REPORT, so scripts/run-tests.mjs can end with a summary
// that names every skipped test with the note of `ctx.skip(note)` and every failed test with the first line of its
// failure (vitest's own JSON report leaves out both the note and the project). Each file's duration is kept too: the
// suite has a time budget, and this says where it goes.
import { writeFileSync } from 'node:fs';

export default class SuiteSummaryReporter {
  onTestRunEnd(testModules, unhandledErrors) {
    const summary = { files: [], unhandledErrors: (unhandledErrors ?? []).map(describeError) };
    for (const testModule of testModules) {
      const tests = [...testModule.children.allTests()].map((test) => {
        const result = test.result();
        return {
          name: test.fullName,
          state: result.state,
          note: result.state === 'skipped' ? (result.note ?? null) : undefined,
          mode: test.options.mode,
          why: result.state === 'failed' ? describeError(result.errors[0]) : undefined,
        };
      });
      summary.files.push({
        project: testModule.project.name,
        file: testModule.relativeModuleId,
        state: testModule.state(),
        // A file can fail outside its tests: an import error, a failing hook.
        errors: testModule.errors().map(describeError),
        durationMs: Math.round(testModule.diagnostic().duration),
        tests,
      });
    }
    if (process.env.SUITE_SUMMARY_REPORT) writeFileSync(process.env.SUITE_SUMMARY_REPORT, JSON.stringify(summary, null, 2));
  }
}

/** The one line that says what went wrong, colours stripped. */
function describeError(error) {
  if (!error) return 'no message';
  const text = error.name && error.message ? `${error.name}: ${error.message}` : (error.message ?? String(error));
  return text.replace(/\u001b\[[0-9;]*m/g, '').trim().split('\n')[0].slice(0, 300);
}
