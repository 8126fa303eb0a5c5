import { Global, Module } from '@nestjs/common';
import { CommandBus, CqrsModule, QueryBus } from '@nestjs/cqrs';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Clock } from '../../common/clock.js';
import { ApiError } from '../../common/errors/api-error.js';
import { loadConfig, AppConfig } from '../../config/app-config.js';
import { dataSourceOptions } from '../../infra/database/data-source-options.js';
import { REDIS } from '../../infra/redis/redis.module.js';
import { Transactions } from '../../infra/database/transactions.js';
import { AccountEntity } from './account.entity.js';
import { ScanningStatus } from '../media/scanning/scanning-status.js';
import { UnconfiguredVirusScanner } from '../media/scanning/virus-scanner.js';
import { AccountsModule } from './accounts.module.js';
import { CreateAccountCommand } from './commands/create-account.command.js';
import { CreateApiKeyCommand } from './commands/create-api-key.command.js';
import { RevokeApiKeyCommand } from './commands/revoke-api-key.command.js';
import { AuthenticateApiKeyQuery } from './queries/authenticate-api-key.query.js';
import { GetUserInfoQuery } from './queries/get-user-info.query.js';

/** A clock the test sets, so timestamps are exact. */
class FixedClock extends Clock {
  at = new Date('2026-11-21T10:00:00.000Z');
  override now(): Date {
    return new Date(this.at);
  }
}

// The user-info answer reports scanning; these handler tests run without a scanner.
const noScanner = new ScanningStatus(new UnconfiguredVirusScanner('no scanner in handler tests'));

@Global()
@Module({
  providers: [
    { provide: Clock, useClass: FixedClock },
    Transactions,
    { provide: ScanningStatus, useValue: noScanner },
    // The key cache off: these tests see every revocation in the database itself (the cache has its e2e test).
    { provide: AppConfig, useValue: loadConfig({ NODE_ENV: 'test', API_KEY_CACHE_SECONDS: '0' }) },
    { provide: REDIS, useValue: null },
  ],
  exports: [Clock, Transactions, ScanningStatus, AppConfig, REDIS],
})
class TestCoreModule {}

describe('accounts command and query handlers (in-memory SQLite, real migrations)', () => {
  let module: TestingModule;
  let commands: CommandBus;
  let queries: QueryBus;

  beforeAll(async () => {
    module = await Test.createTestingModule({
      imports: [
        CqrsModule.forRoot(),
        TypeOrmModule.forRoot({ ...dataSourceOptions({ kind: 'sqlite', path: ':memory:' }), autoLoadEntities: true }),
        TestCoreModule,
        AccountsModule,
      ],
    }).compile();
    await module.init();
    await module.get(DataSource).runMigrations();
    commands = module.get(CommandBus);
    queries = module.get(QueryBus);
  });
  afterAll(() => module.close());

  it('creates an account whose owner key authenticates with every scope, elevated', async () => {
    const created = await commands.execute(new CreateAccountCommand('Ada', 'pro', null));
    const auth = await queries.execute(new AuthenticateApiKeyQuery(created.api_key));
    expect(auth?.actor).toEqual({
      accountId: created.account_id,
      userId: created.user_id,
      keyId: expect.stringMatching(/^key_/),
      scopes: ['read', 'write', 'delete', 'share'],
      elevated: true,
      plan: 'pro',
    });
  });

  it('stores scopes in a fixed order and refuses a key for an unknown account', async () => {
    const { account_id } = await commands.execute(new CreateAccountCommand('Bo', 'free', null));
    const { key } = await commands.execute(new CreateApiKeyCommand(account_id, null, 'k', ['share', 'read'], false));
    expect(key.scopes).toEqual(['read', 'share']);
    expect(key.createdAt.toISOString()).toBe('2026-11-21T10:00:00.000Z');
    await expect(commands.execute(new CreateApiKeyCommand('acc_missing', null, 'k', ['read'], false))).rejects.toMatchObject({
      code: 'not_found',
    } satisfies Partial<ApiError>);
  });

  it('revokes a key only within its own account, after which it no longer authenticates', async () => {
    const a = await commands.execute(new CreateAccountCommand('A', 'free', null));
    const b = await commands.execute(new CreateAccountCommand('B', 'free', null));
    const { key, secret } = await commands.execute(new CreateApiKeyCommand(a.account_id, null, 'k', ['read'], false));
    const actorB = (await queries.execute(new AuthenticateApiKeyQuery(b.api_key)))!.actor;
    await expect(commands.execute(new RevokeApiKeyCommand(actorB, key.id))).rejects.toMatchObject({ code: 'not_found' });
    const actorA = (await queries.execute(new AuthenticateApiKeyQuery(a.api_key)))!.actor;
    await commands.execute(new RevokeApiKeyCommand(actorA, key.id));
    expect(await queries.execute(new AuthenticateApiKeyQuery(secret))).toBeNull();
    await expect(commands.execute(new RevokeApiKeyCommand(actorA, key.id))).rejects.toMatchObject({ code: 'not_found' });
  });

  it('reports storage against the account override, with the percentage rounded down', async () => {
    const created = await commands.execute(new CreateAccountCommand('C', 'free', 1000));
    await module.get(DataSource).getRepository(AccountEntity).update({ id: created.account_id }, { storageUsed: 899 });
    const actor = (await queries.execute(new AuthenticateApiKeyQuery(created.api_key)))!.actor;
    const info = await queries.execute(new GetUserInfoQuery(actor));
    expect(info.storage).toEqual({ used: 899, limit: 1000, available: 101, percentage: 89 });
    expect(info.limits).toEqual({ requests_per_minute: 60, max_file_size: 100 * 1024 ** 2 });
  });
});
