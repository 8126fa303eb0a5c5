import { CommandBus } from '@nestjs/cqrs';
import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { fail, printJson } from '../../../cli/cli-output.js';
import { isScope, type Scope } from '../../../common/auth/scopes.js';
import { apiKeyNameProblem } from '../api-key-name.js';
import { CreateApiKeyCommand } from '../commands/create-api-key.command.js';

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
    const name = options.name ?? 'CLI key';
    const nameProblem = apiKeyNameProblem(name);
    if (nameProblem) fail(`--name ${nameProblem}`);
    const scopes = (options.scopes ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    if (scopes.length === 0 || !scopes.every(isScope)) fail('--scopes must be a comma-separated list of read, write, delete, share');
    const { key, secret } = await this.commands.execute(
      new CreateApiKeyCommand(options.account, null, name, [...new Set(scopes)] as Scope[], options.elevated ?? false),
    );
    printJson({ id: key.id, api_key: secret, scopes: key.scopes, elevated: key.elevated });
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

export const KEYS_CLI = [KeysCli, KeysCreateCli];
