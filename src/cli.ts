import 'reflect-metadata';
import { CommandFactory } from 'nest-commander';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module.js';
import { DB_CLI } from './cli/db.cli.js';
import { fail } from './cli/cli-output.js';
import { ApiError } from './common/errors/api-error.js';
import { ConfigurationError, loadConfig } from './config/app-config.js';
import { ACCOUNTS_CLI } from './modules/accounts/cli/accounts.cli.js';
import { TRASH_CLI } from './modules/trash/cli/trash.cli.js';

/** Operator commands; same configuration as the server. Every command prints one JSON object on stdout. */
async function main(): Promise<void> {
  const config = loadConfig();
  const app = await CommandFactory.createWithoutRunning(AppModule.forCli(config, [...DB_CLI, ...ACCOUNTS_CLI, ...TRASH_CLI]), {
    logger: false,
    errorHandler: (error) => fail(error.message.replace(/^error: /, '')),
    serviceErrorHandler: (error) => fail(error instanceof ApiError ? error.message : String(error), error instanceof ApiError ? error.code : 'internal_error'),
  });
  // Every command may run on a fresh database, so the schema is brought up to date first
  // (`db migrate` does that itself, and reports what it applied).
  if (process.argv[2] !== 'db') await app.get(DataSource).runMigrations({ transaction: 'each' });
  await CommandFactory.runApplication(app);
  await app.close();
}

main().catch((error: unknown) => {
  if (error instanceof ConfigurationError) fail(error.message, 'configuration_error');
  fail(error instanceof Error ? error.message : String(error), 'internal_error');
});
