import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runNode, startServerProcess } from '../../support/processes.js';
import { createTestEnvironment, TEST_REDIS_URL } from '../../support/test-app.js';

/**
 * What the server and the command line say when they cannot start: a configuration, a database, a Redis, a blob
 * directory or a port they cannot use. Each refusal comes before the database would matter, so scripts/run-tests.mjs
 * runs this file once rather than on each database.
 */
describe('the command line without its database', () => {
  it('fails at once with a JSON error naming DATABASE_URL, without its password, and the problem when the database cannot be reached', async () => {
    const started = Date.now();
    const env = { ...process.env, DATABASE_URL: 'postgres://storage:db-password@127.0.0.1:1/unreachable' } as Record<string, string>;
    const result = await runNode('cli.js', ['trash', 'purge'], env);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stderr.trim().split('\n').pop()!).error).toEqual({
      code: 'database_unavailable',
      message: expect.stringContaining('Cannot open the database at DATABASE_URL=postgres://storage:***@127.0.0.1:1/unreachable (connect ECONNREFUSED'),
    });
    expect(result.stderr).not.toContain('db-password');
    // At once: not after the retries Nest's TypeORM module would make (9, 3 s apart). Bounded by those, not by a guess
    // at how fast a loaded machine starts Node (a 10 s bound failed at 10.7 s on one).
    expect(Date.now() - started).toBeLessThan(24_000);
  });
});

describe('service start-up (dist/main.js)', () => {
  it('stops with a message naming REDIS_URL when Redis cannot be reached, without its password', async () => {
    const environment = await createTestEnvironment({ REDIS_URL: 'redis://:redis-password@127.0.0.1:1', PORT: '0' });
    try {
      const result = await runNode('main.js', [], environment.env);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('REDIS_URL=redis://:***@127.0.0.1:1');
      expect(result.stderr).not.toContain('redis-password');
    } finally {
      await environment.dispose();
    }
  });

  it('stops with a message naming REDIS_URL when its database number does not exist, rather than using database 0', async () => {
    const url = new URL(TEST_REDIS_URL);
    url.pathname = '/9999';
    const environment = await createTestEnvironment({ REDIS_URL: url.toString(), PORT: '0' });
    try {
      const result = await runNode('main.js', [], environment.env);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/Cannot reach Redis at REDIS_URL=redis:\/\/.*\/9999 \(ERR DB index is out of range\)/);
    } finally {
      await environment.dispose();
    }
  });

  it('stops at once with a message naming DATABASE_URL, without its password, when the database cannot be reached', async () => {
    const environment = await createTestEnvironment({ DATABASE_URL: 'postgres://storage:db-password@127.0.0.1:1/storage', PORT: '0' });
    try {
      const started = Date.now();
      const result = await runNode('main.js', [], environment.env);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('Cannot open the database at DATABASE_URL=postgres://storage:***@127.0.0.1:1/storage (connect ECONNREFUSED');
      expect(result.stderr).not.toContain('db-password');
      expect(result.stderr).not.toMatch(/\n\s+at /);
      // At once: not after Nest's 9 retries 3 s apart (see above).
      expect(Date.now() - started).toBeLessThan(24_000);
    } finally {
      await environment.dispose();
    }
  });

  it('stops at once with a message naming STORAGE_DIR when the blob directory cannot be used', async () => {
    // A path through a file: no user, root included, can make a directory there.
    const scratch = mkdtempSync(join(tmpdir(), 'fss-storage-dir-'));
    const notADirectory = join(scratch, 'a-file');
    writeFileSync(notADirectory, '');
    const environment = await createTestEnvironment({ PORT: '0', STORAGE_DIR: join(notADirectory, 'blobs') });
    try {
      const result = await runNode('main.js', [], environment.env);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`Cannot use the blob directory at STORAGE_DIR=${join(notADirectory, 'blobs')} (ENOTDIR`);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await environment.dispose();
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  // One value of each kind through the real processes; every rule of the configuration is in app-config.spec.ts.
  it.each([
    ['PORT', 'not-a-port'],
    ['DATABASE_URL', 'postgres://user:db-secret@[127.0.0.1/storage'],
    ['TRASH_PURGE_CRON', '61 * * * *'],
    // Express would refuse it only while the server starts, with its own stack trace.
    ['TRUST_PROXY', '10.0.0.0/99'],
  ])('refuses to start when %s is %s, naming the variable, without a stack trace', async (name, value) => {
    // PORT 0: were the value accepted, the server would start on a free port rather than on 3000.
    const environment = await createTestEnvironment({ PORT: '0', [name]: value });
    try {
      const result = await runNode('main.js', [], environment.env);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(new RegExp(`^Invalid configuration:\\n  - ${name}: `));
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stderr).not.toContain('db-secret');
      // The command line reads the same configuration and says the same, as JSON.
      const cli = await runNode('cli.js', ['db', 'migrate'], environment.env);
      expect(cli.code).toBe(1);
      expect(cli.stdout).toBe('');
      expect(JSON.parse(cli.stderr.trim().split('\n').pop()!).error).toEqual({ code: 'configuration_error', message: expect.stringContaining(`${name}: `) });
    } finally {
      await environment.dispose();
    }
  });

  it('refuses to start with ADMIN_PASSWORD alone, naming ADMIN_USERNAME, rather than leaving the dashboard off', async () => {
    const environment = await createTestEnvironment({ PORT: '0', ADMIN_PASSWORD: 'correct horse battery' });
    try {
      const result = await runNode('main.js', [], environment.env);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^Invalid configuration:\n  - ADMIN_USERNAME: ADMIN_USERNAME must be set when ADMIN_PASSWORD is/);
    } finally {
      await environment.dispose();
    }
  });

  it('fails at once, naming PORT, when a server already listens there, and leaves that server serving', async () => {
    const environment = await createTestEnvironment();
    try {
      const first = await startServerProcess(environment.env);
      try {
        const port = new URL(first.baseUrl).port;
        const started = Date.now();
        const second = await runNode('main.js', [], { ...environment.env, PORT: port });
        expect(second.code).toBe(1);
        expect(second.stderr).toContain(`Cannot listen on PORT=${port}: the port is already in use`);
        expect(second.stderr).not.toMatch(/\n\s+at /);
        expect(Date.now() - started).toBeLessThan(10_000);
        expect((await fetch(`${first.baseUrl}/health`)).status).toBe(200);
      } finally {
        await first.stop();
      }
    } finally {
      await environment.dispose();
    }
  });
});
