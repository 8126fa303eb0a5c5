import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.factory.js';
import { loadConfig } from '../../../src/config/app-config.js';
import { bearer, createKey } from '../../support/accounts.js';
import { runNode, startServerProcess } from '../../support/processes.js';
import { createTestEnvironment, TEST_REDIS_URL, type TestEnvironment } from '../../support/test-app.js';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { ApiKeyEntity } from '../../../src/modules/accounts/api-key.entity.js';
import { startOperatorContext } from '../../support/operator-context.js';

describe('command line (dist/cli.js)', () => {
  let environment: TestEnvironment;

  beforeAll(async () => {
    environment = await createTestEnvironment();
  });
  afterAll(() => environment.dispose());

  it('applies migrations with `db migrate`, once', async () => {
    const first = await runNode('cli.js', ['db', 'migrate'], environment.env);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout).applied.length).toBeGreaterThan(0);
    const second = await runNode('cli.js', ['db', 'migrate'], environment.env);
    expect(JSON.parse(second.stdout)).toEqual({ applied: [] });
  });

  it('creates an account whose key works against the server, and keys with chosen scopes', async () => {
    const created = await runNode('cli.js', ['accounts', 'create', '--name', 'Ada', '--plan', 'pro', '--storage-limit', '5000'], environment.env);
    expect(created.code, created.stderr).toBe(0);
    const account = JSON.parse(created.stdout);
    expect(Object.keys(account).sort()).toEqual(['account_id', 'api_key', 'user_id']);
    expect(account.account_id).toMatch(/^acc_/);
    expect(account.user_id).toMatch(/^usr_/);

    const key = await runNode('cli.js', ['keys', 'create', '--account', account.account_id, '--scopes', 'read,share', '--name', 'viewer'], environment.env);
    expect(key.code, key.stderr).toBe(0);
    const issued = JSON.parse(key.stdout);
    expect(issued).toEqual({ id: expect.stringMatching(/^key_/), api_key: expect.any(String), scopes: ['read', 'share'], elevated: false });

    const app = await createApp(loadConfig(environment.env));
    await app.listen(0, '127.0.0.1');
    try {
      const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
      const owner = await request(url).get('/v1/user/info').set(bearer(account.api_key)).expect(200);
      expect(owner.body.data).toMatchObject({ plan: 'pro', storage: { limit: 5000 }, key: { scopes: ['read', 'write', 'delete', 'share'], elevated: true } });
      const viewer = await request(url).get('/v1/user/info').set(bearer(issued.api_key)).expect(200);
      expect(viewer.body.data.key).toMatchObject({ scopes: ['read', 'share'], elevated: false });
    } finally {
      await app.close();
    }
  });

  it('runs 8 commands side by side on one database, each printing its JSON', async () => {
    const migrated = await runNode('cli.js', ['db', 'migrate'], environment.env);
    expect(migrated.code, migrated.stderr).toBe(0);
    const owner = JSON.parse((await runNode('cli.js', ['accounts', 'create', '--name', 'Owner', '--plan', 'free'], environment.env)).stdout);

    // A command boots only the database and its own module. The deadline only guards against a hang or a lock
    // that is never released; how fast 20 commands finish is measured by `npm run bench -- --only cli`. Eight are
    // enough to queue writers on one database; each is a Node process, so more only cost the suite time.
    const commands = Array.from({ length: 8 }, (_, i) =>
      i % 2 === 0
        ? ['accounts', 'create', '--name', `Parallel ${i}`, '--plan', 'free']
        : ['keys', 'create', '--account', owner.account_id, '--scopes', 'read', '--name', `parallel ${i}`],
    );
    const results = await Promise.all(commands.map((args) => runNode('cli.js', args, environment.env, 120_000)));

    for (const [i, result] of results.entries()) {
      expect(result.code, result.stderr).toBe(0);
      const printed = JSON.parse(result.stdout);
      if (i % 2 === 0) expect(printed).toEqual({ account_id: expect.stringMatching(/^acc_/), user_id: expect.stringMatching(/^usr_/), api_key: expect.any(String) });
      else expect(printed).toEqual({ id: expect.stringMatching(/^key_/), api_key: expect.any(String), scopes: ['read'], elevated: false });
    }
    expect(new Set(results.map((r) => JSON.parse(r.stdout).api_key)).size).toBe(8);
  }, 180_000);

  it('lets commands started together on a new database each apply what is missing and succeed', async () => {
    const fresh = await createTestEnvironment();
    try {
      const results = await Promise.all(['One', 'Two', 'Three', 'Four'].map((name) => runNode('cli.js', ['accounts', 'create', '--name', name, '--plan', 'free'], fresh.env, 60_000)));
      for (const result of results) {
        expect(result.code, result.stderr).toBe(0);
        expect(JSON.parse(result.stdout).account_id).toMatch(/^acc_/);
      }
    } finally {
      await fresh.dispose();
    }
  });

  it('refuses a key name the API refuses too (empty, only spaces, over 200 characters), creating no key', async () => {
    const owner = JSON.parse((await runNode('cli.js', ['accounts', 'create', '--name', 'Names', '--plan', 'free'], environment.env)).stdout);
    const context = await startOperatorContext(environment.env);
    try {
      const keysOfOwner = () => context.get(DataSource).getRepository(ApiKeyEntity).countBy({ accountId: owner.account_id });
      const before = await keysOfOwner();
      for (const name of ['', '   ', 'k'.repeat(201)]) {
        const result = await runNode('cli.js', ['keys', 'create', '--account', owner.account_id, '--scopes', 'read', '--name', name], environment.env);
        expect(result.code, `--name ${JSON.stringify(name)}: ${result.stdout}`).toBe(1);
        expect(result.stdout).toBe('');
        expect(JSON.parse(result.stderr.trim().split('\n').pop()!).error).toEqual({ code: 'invalid_request', message: expect.stringContaining('--name') });
      }
      expect(await keysOfOwner()).toBe(before);
      const longest = await runNode('cli.js', ['keys', 'create', '--account', owner.account_id, '--scopes', 'read', '--name', 'k'.repeat(200)], environment.env);
      expect(longest.code, longest.stderr).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('gives an account that holds the API\'s 100 live keys one more: the operator is not held to the limit', async () => {
    const created = JSON.parse((await runNode('cli.js', ['accounts', 'create', '--name', 'Full', '--plan', 'free'], environment.env)).stdout);
    const full = { accountId: created.account_id, userId: created.user_id, apiKey: created.api_key, keyId: '', auth: bearer(created.api_key) };
    const context = await startOperatorContext(environment.env);
    try {
      for (let i = 0; i < 99; i++) await createKey(context, full, ['read']);
      const result = await runNode('cli.js', ['keys', 'create', '--account', full.accountId, '--scopes', 'read', '--elevated'], environment.env);
      expect(result.code, result.stderr).toBe(0);
      expect(await context.get(DataSource).getRepository(ApiKeyEntity).countBy({ accountId: full.accountId })).toBe(101);
    } finally {
      await context.close();
    }
  });

  it('prints its help and exits 0 with --help', async () => {
    const help = await runNode('cli.js', ['--help'], environment.env);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('accounts');
    expect(help.stdout).toContain('trash');
  });

  it.each([
    [['accounts', 'create', '--name', 'Bob', '--plan', 'gold'], 'plan'],
    [['accounts', 'create', '--name', 'Bob', '--plan', 'free', '--storage-limit', '-5'], 'storage-limit'],
    [['keys', 'create', '--account', 'acc_missing', '--scopes', 'read'], 'not found'],
    [['keys', 'create', '--account', 'acc_missing', '--scopes', 'read,admin'], 'scopes'],
    [['accounts', 'create', '--plan', 'free'], '--name'],
    [['accounts', 'create', '--name', 'Bob', '--plan', 'free', '--bogus'], '--bogus'],
    [['accounts', 'create', '--name', 'Bob', '--plan'], '--plan'],
    // An unquoted name: its second word is not dropped silently (the account would be named "Ada").
    [['accounts', 'create', '--name', 'Ada', 'Lovelace', '--plan', 'free'], 'too many arguments'],
    [['db', 'migrate', 'now'], 'too many arguments'],
    // Commander would keep the last one: this line would create an enterprise account.
    [['accounts', 'create', '--name', 'Bob', '--plan', 'free', '--plan', 'enterprise'], '--plan is given more than once'],
    [['keys', 'create', '--account', 'acc_missing', '--scopes', 'read', '--name', 'a', '--name=b'], '--name is given more than once'],
    [['frobnicate'], "unknown command 'frobnicate'"],
    [[], 'A command is needed'],
  ])('refuses %j with a JSON error and a non-zero exit', async (args, mention) => {
    const result = await runNode('cli.js', args, environment.env);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr.trim().split('\n').pop()!).error.message).toContain(mention);
  });
});

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
