// A vitest reporter that writes every skipped test, with the note of `ctx.skip(note)`, to the JSON file
// named by SKIPPED_TESTS_REPORT, so scripts/run-tests.mjs can say in its summary what was skipped and why
// (vitest's own JSON report leaves the note out).
import { writeFileSync } from 'node:fs';

export default class SkippedTestsReporter {
  onTestRunEnd(testModules) {
    const skipped = [];
    for (const testModule of testModules) {
      for (const test of testModule.children.allTests('skipped')) {
        skipped.push({ file: testModule.relativeModuleId, name: test.fullName, note: test.result().note ?? null, mode: test.options.mode });
      }
    }
    if (process.env.SKIPPED_TESTS_REPORT) writeFileSync(process.env.SKIPPED_TESTS_REPORT, JSON.stringify(skipped, null, 2));
  }
}
