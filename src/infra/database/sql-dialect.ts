import type { DataSource, EntityManager, EntityTarget, FindOneOptions, QueryRunner } from 'typeorm';

export type JsonColumnType = 'varchar' | 'integer' | 'bigint' | 'text';

/**
 * Every difference between SQLite and PostgreSQL that hand-written SQL runs into, in one place, so
 * modules never ask which database they run on: `sqlDialect(manager).parameters()` and so on.
 */
export class SqlDialect {
  constructor(private readonly sqlite: boolean) {}

  /** Positional parameters, numbered in the order they are added: `?` on SQLite, `$n` on PostgreSQL. */
  parameters(): SqlParameters {
    return new SqlParameters(!this.sqlite);
  }

  /** The placeholder of the `n`th positional parameter (from 1), for a statement written once and run often. */
  parameter(n: number): string {
    return this.sqlite ? '?' : `$${n}`;
  }

  /**
   * A FROM item `v` that turns one JSON array parameter into rows, so a batch of any size is one
   * statement with one parameter: json_each on SQLite, jsonb_to_recordset on PostgreSQL.
   */
  jsonRows(placeholder: string, columns: Record<string, JsonColumnType>): string {
    const names = Object.keys(columns);
    if (this.sqlite) return `(SELECT ${names.map((name) => `value->>'${name}' AS ${name}`).join(', ')} FROM json_each(${placeholder})) AS v`;
    return `jsonb_to_recordset(${placeholder}::jsonb) AS v(${names.map((name) => `${name} ${columns[name]}`).join(', ')})`;
  }

  /** A FROM item with one text column `value` per element of a JSON array of strings. */
  jsonValues(placeholder: string): string {
    return this.sqlite ? `json_each(${placeholder})` : `jsonb_array_elements_text(${placeholder}::jsonb)`;
  }

  /**
   * INSERT of the rows of a JSON array parameter (`v`) for which `where` holds, skipping rows that would break a unique
   * constraint. A WHERE clause is needed on SQLite: without it, ON CONFLICT after INSERT ... SELECT is read as a join clause.
   */
  insertJsonRowsIgnoringConflicts(table: string, placeholder: string, columns: Record<string, JsonColumnType>, where = 'true'): string {
    const names = Object.keys(columns);
    return (
      `INSERT INTO ${table} (${names.join(', ')}) ` +
      `SELECT ${names.map((name) => `v.${name}`).join(', ')} FROM ${this.jsonRows(placeholder, columns)} WHERE ${where} ON CONFLICT DO NOTHING`
    );
  }

  /**
   * A sub-SELECT of those ids (a JSON array parameter) that are the primary keys of rows of `table` now, which no other
   * transaction can then delete until this one ends: for an INSERT of rows referencing them, so a row whose DELETE
   * commits first is left out, rather than breaking the foreign key and failing the whole statement. PostgreSQL:
   * FOR KEY SHARE, the lock the foreign key check takes anyway, taken first; a row whose DELETE commits while it waits is
   * skipped. SQLite: a plain look-up, its write transactions taking turns.
   */
  existingKeysHeld(table: string, idsPlaceholder: string): string {
    return `SELECT id FROM ${table} WHERE id IN (SELECT value FROM ${this.jsonValues(idsPlaceholder)})${this.sqlite ? '' : ' FOR KEY SHARE'}`;
  }

  /**
   * Find options that lock the row found until the transaction ends (SELECT ... FOR UPDATE) on
   * PostgreSQL; SQLite has no row locks, and its transactions already take turns.
   */
  lockForUpdate<T>(): Pick<FindOneOptions<T>, 'lock'> {
    return this.sqlite ? {} : { lock: { mode: 'pessimistic_write' } };
  }

  /**
   * Find options that keep the row found from being updated or deleted by another transaction until this one ends,
   * while others may still read and share-lock it: SELECT ... FOR SHARE on PostgreSQL. Waiting for such a lock,
   * PostgreSQL checks the row's conditions again on its newest version.
   */
  lockForShare<T>(): Pick<FindOneOptions<T>, 'lock'> {
    return this.sqlite ? {} : { lock: { mode: 'pessimistic_read' } };
  }

  /**
   * Find options that keep the row found from being locked for update (or deleted) by another transaction until this
   * one ends, while others may still read, key-share or update its non-key columns: SELECT ... FOR KEY SHARE on
   * PostgreSQL. Waiting for such a lock, PostgreSQL checks the row's conditions again on its newest version.
   */
  lockForKeyShare<T>(): Pick<FindOneOptions<T>, 'lock'> {
    return this.sqlite ? {} : { lock: { mode: 'for_key_share' } };
  }

  /**
   * Makes transactions that take the lock `key` take turns until they end, without locking a row (others are not held
   * up): a transaction-level advisory lock on PostgreSQL. SQLite's transactions already take turns.
   */
  async takeTurnsOn(tx: EntityManager, key: string): Promise<void> {
    if (this.sqlite) return;
    await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
  }

  /**
   * Runs `work` in a transaction on `connection` that first waits until no other process runs such a transaction (for
   * schema migrations, which the server and every CLI command apply at start). PostgreSQL: a transaction-level advisory
   * lock. SQLite: the write lock, taken by a write before anything is read (creating and dropping a scratch table), so
   * the transaction sees what a process that held it before committed; its wait may outlast the usual busy timeout.
   */
  async exclusiveTransaction<T>(connection: QueryRunner, key: string, work: () => Promise<T>): Promise<T> {
    const [{ timeout: busyTimeoutMs }] = this.sqlite ? await connection.query('PRAGMA busy_timeout') : [{ timeout: 0 }];
    if (this.sqlite) await connection.query(`PRAGMA busy_timeout = ${EXCLUSIVE_WAIT_MS}`);
    await connection.startTransaction();
    try {
      if (this.sqlite) {
        await connection.query('CREATE TABLE "exclusive_transaction_lock" ("held" integer)');
        await connection.query('DROP TABLE "exclusive_transaction_lock"');
      } else {
        await connection.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
      }
      const result = await work();
      await connection.commitTransaction();
      return result;
    } catch (error) {
      if (connection.isTransactionActive) await connection.rollbackTransaction().catch(() => undefined);
      throw error;
    } finally {
      if (this.sqlite) await connection.query(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    }
  }

  /**
   * A column in a condition that must check rows found another way (by primary key), not choose an
   * index. SQLite keeps no statistics, so given `status = 'pending'` it may walk a whole index (every
   * pending row) for each row of a batch; a unary `+` takes the column out of its index choice.
   * PostgreSQL plans from statistics and has no `+` for text.
   */
  notIndexed(column: string): string {
    return this.sqlite ? `+${column}` : column;
  }

  /**
   * Name search through a table's trigram index (migration 1764340000000). On SQLite the FTS5 index is
   * its own table and must drive the query, so this answers the FROM item (the index joined to `table`
   * as `alias` by rowid, in that order) and the condition that the name contains the phrase in
   * `placeholder`, to be put before the listing's other conditions. PostgreSQL answers null: there the GIN index serves
   * `name_key LIKE '%x%'` itself, and the planner decides from its statistics when to use it.
   */
  trigramSearch(table: 'files' | 'folders', alias: string): { from: string; contains(placeholder: string): string } | null {
    if (!this.sqlite) return null;
    return {
      from: `${table}_name_search CROSS JOIN ${table} ${alias} ON ${alias}.rowid = ${table}_name_search.rowid`,
      contains: (placeholder) => `${table}_name_search MATCH ${placeholder}`,
    };
  }

  /**
   * SQL counting up to `limit` rows of `table` (any account, any state) whose name contains the phrase
   * `placeholder`, from the trigram index alone; null where the planner makes that choice (PostgreSQL).
   */
  trigramSearchProbe(table: 'files' | 'folders', placeholder: string, limit: number): string | null {
    if (!this.sqlite) return null;
    return `SELECT COUNT(*) AS count FROM (SELECT 1 FROM ${table}_name_search WHERE ${table}_name_search MATCH ${placeholder} LIMIT ${limit})`;
  }

  /** The value of a trigram search's placeholder for a substring: an FTS5 phrase, in which every character is literal but `"`. */
  trigramPhrase(substring: string): string {
    return `"${substring.replaceAll('"', '""')}"`;
  }

  /** Whether transactions run at the same time (PostgreSQL, one connection each) or take turns (SQLite). */
  get concurrentTransactions(): boolean {
    return !this.sqlite;
  }

  /** Whether a WITH clause may hold UPDATE ... RETURNING (PostgreSQL), so dependent writes are one statement. */
  get writableCte(): boolean {
    return !this.sqlite;
  }
}

const SQLITE = new SqlDialect(true);
const POSTGRES = new SqlDialect(false);

/** How long an exclusive transaction waits on SQLite for another process's to end. */
const EXCLUSIVE_WAIT_MS = 120_000;

/** The dialect of the database behind a data source or entity manager. */
export function sqlDialect(source: DataSource | EntityManager): SqlDialect {
  const options = 'connection' in source ? source.connection.options : source.options;
  return options.type === 'better-sqlite3' ? SQLITE : POSTGRES;
}

/** Positional parameters in the order they appear in the SQL. */
export class SqlParameters {
  readonly values: unknown[] = [];

  constructor(private readonly numbered: boolean) {}

  /** Adds a value and answers its placeholder. */
  add(value: unknown): string {
    this.values.push(value);
    return this.numbered ? `$${this.values.length}` : '?';
  }
}

/**
 * Columns of an entity as JSON rows for `jsonRows`: names and types come from the entity's column
 * decorators (the one place a table's columns are written), values through their transformers.
 */
export function entityJsonColumns<T>(manager: EntityManager, entity: EntityTarget<T>, properties: Array<keyof T & string>) {
  const metadata = manager.connection.getMetadata(entity);
  const columns = properties.map((property) => {
    const column = metadata.findColumnWithPropertyName(property);
    if (!column) throw new Error(`${metadata.name} has no column ${property}`);
    return column;
  });
  return {
    types: Object.fromEntries(columns.map((column) => [column.databaseName, jsonColumnType(column.type)])) as Record<string, JsonColumnType>,
    row: (value: Partial<T>): Record<string, unknown> =>
      Object.fromEntries(columns.map((column) => [column.databaseName, column.getEntityValue(value, true) ?? null])),
  };
}

function jsonColumnType(type: unknown): JsonColumnType {
  if (type === 'integer' || type === 'text' || type === 'varchar') return type;
  throw new Error(`column type ${String(type)} has no JSON row type`);
}
