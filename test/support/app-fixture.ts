import { afterAll, beforeAll } from 'vitest';
import { createAccount, type TestAccount } from './accounts.js';
import { startTestApp, type TestApp } from './test-app.js';

export interface AppFixture<T extends TestApp = TestApp> {
  t: T;
  /** An account with its owner key (see createAccount). */
  owner: TestAccount;
}

export interface AppFixtureOptions<T extends TestApp> {
  /** Environment overrides for the application. */
  env?: Record<string, string>;
  /** Options of the owner account. */
  owner?: Parameters<typeof createAccount>[1];
  /** How to start the application; startTestApp unless the test needs another one (e.g. startTestAppWithOwnRedis). */
  start?: (env: Record<string, string>) => Promise<T>;
}

/**
 * The usual set-up of an e2e spec: before the enclosing describe's tests, a test application and an
 * account with its owner key, handed to `assign`; after them, the application closed. Spec-specific
 * set-up goes into a further beforeAll, which runs after this one.
 *
 *     let t: TestApp;
 *     let owner: TestAccount;
 *     useTestApp((started) => ({ t, owner } = started));
 */
export function useTestApp<T extends TestApp = TestApp>(assign: (fixture: AppFixture<T>) => void, options: AppFixtureOptions<T> = {}): void {
  let t: T | undefined;
  beforeAll(async () => {
    t = await (options.start ?? (startTestApp as unknown as (env: Record<string, string>) => Promise<T>))(options.env ?? {});
    assign({ t, owner: await createAccount(t.app, options.owner) });
  });
  afterAll(async () => {
    await t?.close();
  });
}
