import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files of minutes, started before the rest: one started last leaves a single worker running it alone at the end (the
 * client conformance, three interpreters' suites in one file, once ran 80 s alone). Vitest orders files by the durations
 * of the last run when it has them; a fresh clone, as in CI, has none and starts the largest files first.
 */
const LONG_FILES = ['clients/conformance/', 'test/e2e/files/concurrent-quota.', 'test/e2e/webhooks/durability.', 'test/e2e/fuzz/', 'test/e2e/foundation/cli.', 'test/e2e/foundation/start-up.'];

/**
 * The long files of every project first, then each project's other files, project after project: `npm test` runs the
 * unit tests and both databases' e2e tests side by side, and a worker that takes a file of another project is
 * replaced by a new one (its module cache, Nest and TypeORM loaded, is the project's), so the projects are not mixed
 * further than the long files need.
 */
class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const index = LONG_FILES.findIndex((path) => file.moduleId.includes(path));
      return index === -1 ? LONG_FILES.length : index;
    };
    const projects = [...new Set(sorted.map((file) => file.project.name))];
    return sorted
      .map((file, order) => ({ file, order, project: projects.indexOf(file.project.name) }))
      .sort((a, b) => {
        const [rankA, rankB] = [rank(a.file), rank(b.file)];
        if (rankA < LONG_FILES.length || rankB < LONG_FILES.length) return rankA - rankB || a.project - b.project;
        return a.project - b.project || a.order - b.order;
      })
      .map(({ file }) => file);
  }
}

// Files that run on the first database only, because they test what does not depend on the database: the client
// libraries (the JavaScript library's tests, and the Python, PHP and Ruby libraries' conformance) test the HTTP
// interface, which the server's own e2e tests cover on both databases; Swagger UI is a page in a browser; the test
// command's own test runs throwaway projects. The concurrent-quota file starts servers on both databases itself,
// whatever TEST_DB says. The start-up, configuration and argument files test refusals that come before the database
// matters (a bad variable, an unreachable Redis, a port in use, a command line the CLI cannot parse), and PORT=0 the
// port a server announces. Together about seven minutes of worker time saved.
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

const e2eTest = {
  include: ['test/e2e/**/*.e2e-spec.ts', 'clients/js/test/**/*.e2e-spec.ts', 'clients/conformance/**/*.e2e-spec.ts'],
  environment: 'node' as const,
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
};

// `npm test` (scripts/run-tests.mjs) sets SUITE_DATABASES=sqlite,postgres: one e2e project per database, e2e-sqlite
// and e2e-postgres, running side by side in one run, RUN_ONCE's files in the first only. Without it, as in
// `TEST_DB=postgres npx vitest run --project e2e <paths>`, one e2e project on TEST_DB (SQLite by default).
const suiteDatabases = (process.env.SUITE_DATABASES ?? '').split(',').filter(Boolean);
const e2eProjects = suiteDatabases.length
  ? suiteDatabases.map((db, index) => ({
      extends: true as const,
      test: { ...e2eTest, name: `e2e-${db}`, env: { TEST_DB: db }, exclude: index > 0 ? RUN_ONCE : [] },
    }))
  : [{ extends: true as const, test: { ...e2eTest, name: 'e2e' } }];

// SWC compiles the decorators with their metadata, which Nest's dependency injection reads.
export default defineConfig({
  plugins: [swc.vite({ module: { type: 'es6' }, jsc: { target: 'es2023', parser: { syntax: 'typescript', decorators: true }, transform: { legacyDecorator: true, decoratorMetadata: true } } })],
  test: {
    globals: false,
    sequence: { sequencer: LongFilesFirst },
    // Every test file starts its own application, database and Redis prefix, and nothing is mocked, so the files of
    // one worker share its module cache: Nest, TypeORM and the application load once per worker instead of once per
    // file, which took about 40% of an e2e run's time.
    isolate: false,
    reporters: process.env.CI ? ['default'] : ['default'],
    // Three on two cores: much of an e2e file is waiting (servers starting, retry schedules, long polls), and a third
    // worker fills it; two left the cores idle a third of the time. Shared by the projects of one run.
    maxWorkers: 3,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['src/**/*.spec.ts'], environment: 'node' },
      },
      ...e2eProjects,
    ],
  },
});
