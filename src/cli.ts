import 'reflect-metadata';
import type { Type } from '@nestjs/common';
import { CommandFactory, CommandRunnerService } from 'nest-commander';
import { DataSource } from 'typeorm';
import { CliCoreModule } from './cli/cli-core.module.js';
import { fail, reportLostOutput } from './cli/cli-output.js';
import { ApiError } from './common/errors/api-error.js';
import { type AppConfig, ConfigurationError, loadConfig } from './config/app-config.js';
import { applyMigrations, MigrationError } from './infra/database/apply-migrations.js';
import { describeConnectionError } from './infra/connection-error.js';
import { cannotMigrateDatabase, cannotOpenDatabase } from './infra/database/probe-database.js';

/**
 * Each command group's module, loaded only when its command runs: a command boots the database and its own
 * module, never the server's graph (queues, media probes, schedulers), so it answers in well under a second.
 */
const COMMAND_MODULES: Record<string, () => Promise<Type>> = {
  accounts: async () => (await import('./modules/accounts/cli/accounts-cli.module.js')).AccountsCliModule,
  keys: async () => (await import('./modules/accounts/cli/keys-cli.module.js')).KeysCliModule,
  trash: async () => (await import('./modules/trash/cli/trash-cli.module.js')).TrashCliModule,
  db: async () => (await import('./cli/db-cli.module.js')).DbCliModule,
};

const HELP_SHOWN = new Set(['commander.helpDisplayed', 'commander.help']);

/** The modules for this invocation: the named group's, or all of them (for help and unknown commands). */
async function commandModules(group: string | undefined): Promise<Type[]> {
  const loaders = group && Object.hasOwn(COMMAND_MODULES, group) ? [COMMAND_MODULES[group]] : Object.values(COMMAND_MODULES);
  return [...new Set(await Promise.all(loaders.map((load) => load())))];
}

/** Commander's command tree, as far as it is walked here. */
interface CommandTree {
  allowExcessArguments(allow: boolean): unknown;
  readonly commands: readonly CommandTree[];
}

/**
 * No command takes positional arguments, so a stray word is refused rather than ignored: `--name Ada Lovelace`
 * unquoted must not create an account named "Ada". (Commander 11, under nest-commander, ignores them by default.)
 */
function refuseExcessArguments(command: CommandTree): void {
  command.allowExcessArguments(false);
  command.commands.forEach(refuseExcessArguments);
}

/**
 * Every option is given once: commander keeps the last of `--plan free --plan enterprise`, so a line pasted
 * together from two would create something its operator did not read.
 */
function refuseRepeatedOptions(args: readonly string[]): void {
  const seen = new Set<string>();
  for (const arg of args) {
    if (!arg.startsWith('--')) continue;
    const option = arg.split('=')[0];
    if (seen.has(option)) fail(`${option} is given more than once`);
    seen.add(option);
  }
}

/**
 * Every argument is printable text. Node decodes the command line as UTF-8 and turns bytes that are not UTF-8
 * (a Latin-1 terminal) into U+FFFD, and a control character (a pasted newline, an escape sequence) would be stored
 * as written and later redraw an operator's terminal or split a log line: either is refused, naming its option.
 */
function refuseUnprintableArguments(args: readonly string[]): void {
  args.forEach((arg, i) => {
    const option = arg.startsWith('-') ? arg.split('=')[0] : args[i - 1]?.startsWith('-') ? args[i - 1] : `argument ${i + 1}`;
    if (arg.includes('\uFFFD')) fail(`${option} is not UTF-8 text (the terminal sent bytes that do not decode; U+FFFD stands in for them)`);
    const control = /\p{Cc}/u.exec(arg)?.[0];
    if (control) fail(`${option} must not contain control characters (found U+${control.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')})`);
  });
}

/** A command's failure as its JSON error, named so that the operator can act on it. */
function failWith(error: unknown, config: AppConfig): never {
  if (error instanceof ApiError) fail(error.message, error.code);
  if (error instanceof MigrationError) fail(cannotMigrateDatabase(config.database, error.reason), 'migration_failed');
  fail(String(error), 'internal_error');
}

/** Operator commands; same configuration as the server. Every command prints one JSON object on stdout. */
async function main(): Promise<void> {
  reportLostOutput();
  const group = process.argv[2];
  // Commander would print its help on stderr and exit 0: a script would take that for success.
  if (group === undefined) fail('A command is needed: accounts create, keys create, trash purge or db migrate (--help describes them)');
  // Commander answers `help <anything>` with the general help and exit code 0: a misspelt command would read as found.
  const helpFor = group === 'help' ? process.argv[3] : undefined;
  if (helpFor !== undefined && !Object.hasOwn(COMMAND_MODULES, helpFor)) fail(`unknown command '${helpFor}'`);
  const config = loadConfig();
  refuseRepeatedOptions(process.argv.slice(2));
  refuseUnprintableArguments(process.argv.slice(2));
  const modules = await commandModules(group);
  const app = await CommandFactory.createWithoutRunning(
    { module: class Cli {}, imports: [CliCoreModule.register(config), ...modules] },
    {
      logger: false,
      // Nest's own handling of a failed start (an unreachable database) exits the process silently; main() reports it instead.
      abortOnError: false,
      // Commander reports a shown help text as an error too; that one is a success.
      errorHandler: (error) => (HELP_SHOWN.has((error as { code?: string }).code ?? '') ? process.exit(0) : fail(error.message.replace(/^error: /, ''))),
      serviceErrorHandler: (error) => failWith(error, config),
      // A subcommand's own parse errors (a missing or unknown option) bypass errorHandler; they are JSON too.
      outputConfiguration: { outputError: (text) => fail(text.trim().replace(/^error: /, '')) },
    },
    // Booting the modules opens the database and nothing else that can fail: its failure is named like the server's.
  ).catch((error: unknown) => fail(cannotOpenDatabase(config.database, describeConnectionError(error)), 'database_unavailable'));
  refuseExcessArguments(app.get(CommandRunnerService)['commander'] as CommandTree);
  // Every command may run on a fresh database, so the schema is brought up to date first
  // (`db migrate` does that itself, and reports what it applied).
  if (group !== 'db') await applyMigrations(app.get(DataSource)).catch((error: unknown) => failWith(error, config));
  await CommandFactory.runApplication(app);
  await app.close();
}

main().catch((error: unknown) => {
  if (error instanceof ConfigurationError) fail(error.message, 'configuration_error');
  fail(error instanceof Error ? error.message : String(error), 'internal_error');
});
