import { CommandBus } from '@nestjs/cqrs';
import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { fail, printJson } from '../../../cli/cli-output.js';
import { isScope, type Scope } from '../../../common/auth/scopes.js';
import { CreateAccountCommand } from '../commands/create-account.command.js';
import { CreateApiKeyCommand } from '../commands/create-api-key.command.js';
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

interface CreateKeyOptions {
  account?: string;
  scopes?: string;
  elevated?: boolean;
  name?: string;
}

@SubCommand({ name: 'create', description: 'Create an API key for an account' })
export class KeysCreateCli extends CommandRunner {
  constructor(private readonly commands: CommandBus) {
    super();
  }

  async run(_: string[], options: CreateKeyOptions): Promise<void> {
    if (!options.account) fail('--account is required');
    const scopes = (options.scopes ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    if (scopes.length === 0 || !scopes.every(isScope)) fail('--scopes must be a comma-separated list of read, write, delete, share');
    const key = await this.commands.execute(
      new CreateApiKeyCommand(options.account, null, options.name ?? 'CLI key', [...new Set(scopes)] as Scope[], options.elevated ?? false),
    );
    printJson({ id: key.id, api_key: key.api_key, scopes: key.scopes, elevated: key.elevated });
  }

  @Option({ flags: '--account <id>', description: 'Account id (acc_…)', required: true })
  parseAccount(value: string): string {
    return value;
  }

  @Option({ flags: '--scopes <list>', description: 'Comma-separated: read,write,delete,share', required: true })
  parseScopes(value: string): string {
    return value;
  }

  @Option({ flags: '--elevated', description: 'Allow permanent deletion, emptying the trash, webhooks and key management' })
  parseElevated(): boolean {
    return true;
  }

  @Option({ flags: '--name <name>', description: 'A label for the key' })
  parseName(value: string): string {
    return value;
  }
}

@Command({ name: 'keys', description: 'Manage API keys', subCommands: [KeysCreateCli] })
export class KeysCli extends CommandRunner {
  async run(): Promise<void> {
    fail('Use: keys create --account ID --scopes read,write,delete,share [--elevated] [--name NAME]');
  }
}

export const ACCOUNTS_CLI = [AccountsCli, AccountsCreateCli, KeysCli, KeysCreateCli];
