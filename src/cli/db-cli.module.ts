import { Module } from '@nestjs/common';
import { DB_CLI } from './db.cli.js';

/** `db migrate`. */
@Module({ providers: DB_CLI })
export class DbCliModule {}
