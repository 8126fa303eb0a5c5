import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files of minutes, started before the rest: one started last leaves a single worker running it alone at the end (the
 * client conformance, three interpreters' suites in one file, once ran 80 s alone). Vitest orders files by the durations
 * of the last run when it has them; a fresh clone, as in CI, has none and starts the largest files first.
 */
const LONG_FILES = ['clients/conformance/', 'test/e2e/files/concurrent-quota.', 'test/e2e/webhooks/durability.', 'test/e2e/fuzz/', 'test/e2e/foundation/cli.', 'test/e2e/foundation/start-up.'];

class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const index = LONG_FILES.findIndex((path) => file.moduleId.includes(path));
      return index === -1 ? LONG_FILES.length : index;
    };
    // Within each project only: projects run one after the other, in the order the base sequencer gave them.
    const projects = [...new Set(sorted.map((file) => file.project.name))];
    return projects.flatMap((name) =>
      sorted
        .filter((file) => file.project.name === name)
        .map((file, order) => ({ file, order }))
        .sort((a, b) => rank(a.file) - rank(b.file) || a.order - b.order)
        .map(({ file }) => file),
    );
  }
}

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
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['src/**/*.spec.ts'], environment: 'node' },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.e2e-spec.ts', 'clients/js/test/**/*.e2e-spec.ts', 'clients/conformance/**/*.e2e-spec.ts'],
          environment: 'node',
          testTimeout: 60_000,
          hookTimeout: 60_000,
          pool: 'forks',
          // Three on two cores: much of an e2e file is waiting (servers starting, retry schedules, long polls),
          // and a third worker fills it; two left the cores idle a third of the time.
          maxWorkers: 3,
        },
      },
    ],
  },
});
