import { CommandBus } from '@nestjs/cqrs';
import { Command, CommandRunner, SubCommand } from 'nest-commander';
import { fail, printJson } from '../../../cli/cli-output.js';
import { PurgeTrashCommand } from '../commands/purge-trash.command.js';

@SubCommand({ name: 'purge', description: 'Permanently delete every trashed file whose recovery window has passed, now' })
export class TrashPurgeCli extends CommandRunner {
  constructor(private readonly commands: CommandBus) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.commands.execute(new PurgeTrashCommand()));
  }
}

@Command({ name: 'trash', description: 'Manage the trash', subCommands: [TrashPurgeCli] })
export class TrashCli extends CommandRunner {
  async run(): Promise<void> {
    fail('Use: trash purge');
  }
}

export const TRASH_CLI = [TrashCli, TrashPurgeCli];
