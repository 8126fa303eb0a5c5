import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

// SWC compiles the decorators with their metadata, which Nest's dependency injection reads.
export default defineConfig({
  plugins: [swc.vite({ module: { type: 'es6' }, jsc: { target: 'es2023', parser: { syntax: 'typescript', decorators: true }, transform: { legacyDecorator: true, decoratorMetadata: true } } })],
  test: {
    globals: false,
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
