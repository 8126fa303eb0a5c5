import { resolve } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountEntity } from '../../../src/modules/accounts/account.entity.js';
import { ApiKeyEntity } from '../../../src/modules/accounts/api-key.entity.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { DIST, type ProcessResult, runNode, runToExit } from '../../support/processes.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';

/**
 * `node dist/cli.js` run by a shell, so that an argument can carry bytes a JavaScript string cannot (Node's spawn
 * encodes every argument as UTF-8): `$(printf …)` writes them, as a terminal set to Latin-1 would.
 */
function runCliFromShell(shellArgs: string, env: Record<string, string>): Promise<ProcessResult> {
  return runToExit('/bin/sh', ['-c', `exec "$0" "$1" ${shellArgs}`, process.execPath, resolve(DIST, 'cli.js')], env, 30_000, `cli.js ${shellArgs}`);
}

function errorOf(result: ProcessResult): { code: string; message: string } {
  return JSON.parse(result.stderr.trim().split('\n').pop()!).error;
}

describe('command line arguments that are not printable text', () => {
  let environment: TestEnvironment;
  let context: INestApplicationContext;
  let owner: { account_id: string };

  beforeAll(async () => {
    environment = await createTestEnvironment();
    const created = await runNode('cli.js', ['accounts', 'create', '--name', 'Owner', '--plan', 'free'], environment.env);
    expect(created.code, created.stderr).toBe(0);
    owner = JSON.parse(created.stdout);
    context = await startOperatorContext(environment.env);
  });
  afterAll(async () => {
    await context.close();
    await environment.dispose();
  });

  const accounts = () => context.get(DataSource).getRepository(AccountEntity).count();
  const keys = () => context.get(DataSource).getRepository(ApiKeyEntity).countBy({ accountId: owner.account_id });

  it.each([
    ['a pasted newline', 'Ada\nLovelace', 'U+000A'],
    ['an escape sequence that would recolour a terminal', 'Ada\u001b[31m', 'U+001B'],
    ['a C1 control', 'Ada\u0085', 'U+0085'],
  ])('refuses an account name with %s, naming --name, and creates no account', async (_, name, found) => {
    const before = await accounts();
    for (const args of [
      ['accounts', 'create', '--name', name, '--plan', 'free'],
      ['accounts', 'create', `--name=${name}`, '--plan', 'free'],
    ]) {
      const result = await runNode('cli.js', args, environment.env);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(errorOf(result)).toEqual({ code: 'invalid_request', message: `--name must not contain control characters (found ${found})` });
    }
    expect(await accounts()).toBe(before);
  });

  it('refuses a key name with a control character, and creates no key', async () => {
    const before = await keys();
    const result = await runNode('cli.js', ['keys', 'create', '--account', owner.account_id, '--scopes', 'read', '--name', 'tab\there'], environment.env);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(errorOf(result).message).toBe('--name must not contain control characters (found U+0009)');
    expect(await keys()).toBe(before);
  });

  it('refuses an account name in bytes that are not UTF-8 (a Latin-1 "Café") rather than storing "Caf\uFFFD"', async () => {
    const before = await accounts();
    const result = await runCliFromShell(`accounts create --name "$(printf 'Caf\\351')" --plan free`, environment.env);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(errorOf(result)).toEqual({ code: 'invalid_request', message: expect.stringContaining('--name is not UTF-8 text') });
    expect(await accounts()).toBe(before);

    // The same name in UTF-8 is an ordinary name.
    const utf8 = await runCliFromShell(`accounts create --name "$(printf 'Caf\\303\\251')" --plan free`, environment.env);
    expect(utf8.code, utf8.stderr).toBe(0);
    const account = await context.get(DataSource).getRepository(AccountEntity).findOneByOrFail({ id: JSON.parse(utf8.stdout).account_id });
    expect(account.name).toBe('Café');
  });
});

describe('help for a command that does not exist', () => {
  it('is refused with a JSON error and exit code 1, while help for one that exists is shown', async () => {
    const environment = await createTestEnvironment();
    try {
      const unknown = await runNode('cli.js', ['help', 'acounts'], environment.env);
      expect(unknown.code).toBe(1);
      expect(unknown.stdout).toBe('');
      expect(errorOf(unknown)).toEqual({ code: 'invalid_request', message: "unknown command 'acounts'" });
      const known = await runNode('cli.js', ['help', 'accounts'], environment.env);
      expect(known.code, known.stderr).toBe(0);
      expect(known.stdout).toContain('Usage: cli accounts');
    } finally {
      await environment.dispose();
    }
  });
});

describe('command lines the command line refuses', () => {
  let environment: TestEnvironment;

  beforeAll(async () => {
    environment = await createTestEnvironment();
  });
  afterAll(() => environment.dispose());

  it('prints its help and exits 0 with --help', async () => {
    const help = await runNode('cli.js', ['--help'], environment.env);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('accounts');
    expect(help.stdout).toContain('trash');
  });

  it.each([
    [['accounts', 'create', '--name', 'Bob', '--plan', 'gold'], 'plan'],
    [['accounts', 'create', '--name', 'Bob', '--plan', 'free', '--storage-limit', '-5'], 'storage-limit'],
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
