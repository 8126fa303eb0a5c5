import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.factory.js';
import { loadConfig } from '../../../src/config/app-config.js';
import { bearer, createKey } from '../../support/accounts.js';
import { runNode } from '../../support/processes.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
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

  it('refuses a key for an account that does not exist, with a JSON error and a non-zero exit', async () => {
    const result = await runNode('cli.js', ['keys', 'create', '--account', 'acc_missing', '--scopes', 'read'], environment.env);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr.trim().split('\n').pop()!).error.message).toContain('not found');
  });
});
