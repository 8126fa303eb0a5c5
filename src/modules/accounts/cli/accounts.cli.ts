import { CommandBus } from '@nestjs/cqrs';
import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { fail, printJson } from '../../../cli/cli-output.js';
import { CreateAccountCommand } from '../commands/create-account.command.js';
import { isPlanName, PLAN_NAMES } from '../plans.js';

interface CreateAccountOptions {
  name?: string;
  plan?: string;
  storageLimit?: string;
}

@SubCommand({ name: 'create', description: 'Create an account with an owner user and an all-scopes elevated key' })
export class AccountsCreateCli extends CommandRunner {
  constructor(private readonly commands: CommandBus) {
    super();
  }

  async run(_: string[], options: CreateAccountOptions): Promise<void> {
    const name = options.name?.trim();
    if (!name || name.length > 200) fail('--name is required (1 to 200 characters)');
    if (!options.plan || !isPlanName(options.plan)) fail(`--plan must be one of ${PLAN_NAMES.join(', ')}`);
    let storageLimit: number | null = null;
    if (options.storageLimit !== undefined) {
      if (!/^\d+$/.test(options.storageLimit) || !Number.isSafeInteger(Number(options.storageLimit))) fail('--storage-limit must be a whole number of bytes');
      storageLimit = Number(options.storageLimit);
    }
    printJson(await this.commands.execute(new CreateAccountCommand(name, options.plan, storageLimit)));
  }

  @Option({ flags: '--name <name>', description: 'Account and owner name', required: true })
  parseName(value: string): string {
    return value;
  }

  @Option({ flags: '--plan <plan>', description: 'free | pro | enterprise', required: true })
  parsePlan(value: string): string {
    return value;
  }

  @Option({ flags: '--storage-limit <bytes>', description: "Storage quota in bytes, instead of the plan's" })
  parseStorageLimit(value: string): string {
    return value;
  }
}

@Command({ name: 'accounts', description: 'Manage accounts', subCommands: [AccountsCreateCli] })
export class AccountsCli extends CommandRunner {
  async run(): Promise<void> {
    fail('Use: accounts create --name NAME --plan free|pro|enterprise [--storage-limit BYTES]');
  }
}

export const ACCOUNTS_CLI = [AccountsCli, AccountsCreateCli];
