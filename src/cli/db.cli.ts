import { Command, CommandRunner, SubCommand } from 'nest-commander';
import { DataSource } from 'typeorm';
import { fail, printJson } from './cli-output.js';
import { applyMigrations } from '../infra/database/apply-migrations.js';

@SubCommand({ name: 'migrate', description: 'Apply pending database migrations' })
export class DbMigrateCli extends CommandRunner {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  async run(): Promise<void> {
    const applied = await applyMigrations(this.dataSource);
    printJson({ applied: applied.map((m) => m.name) });
  }
}

@Command({ name: 'db', description: 'Database maintenance', subCommands: [DbMigrateCli] })
export class DbCli extends CommandRunner {
  async run(): Promise<void> {
    fail('Use: db migrate');
  }
}

export const DB_CLI = [DbCli, DbMigrateCli];
