import Database from 'better-sqlite3';
import pg from 'pg';

/**
 * Direct access to the service's database from the bench process, for bulk set-up (100,000 file
 * rows, 10,000 outbox rows) that would take far too long through the API. It writes exactly the
 * columns of the migrations, so the server reads the rows as if it had written them.
 */
export async function openDatabase(databaseUrl) {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new Database(databaseUrl.slice('sqlite:'.length));
    // Same settings as the server; the busy timeout rides out the server's own writes.
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 10000');
    db.pragma('synchronous = NORMAL');
    return {
      kind: 'sqlite',
      async insertMany(table, rows) {
        if (rows.length === 0) return;
        const columns = Object.keys(rows[0]);
        const statement = db.prepare(`INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
        db.transaction((all) => {
          for (const row of all) statement.run(columns.map((c) => toSqlite(row[c])));
        })(rows);
      },
      async query(sql, params = []) {
        const statement = db.prepare(toSqliteParams(sql));
        return statement.reader ? statement.all(params.map(toSqlite)) : (statement.run(params.map(toSqlite)), []);
      },
      async analyze() {},
      async close() {
        db.close();
      },
    };
  }
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  return {
    kind: 'postgres',
    async insertMany(table, rows) {
      if (rows.length === 0) return;
      const columns = Object.keys(rows[0]);
      // Up to 65,535 parameters per statement; many rows per statement, all in one transaction.
      const perStatement = Math.max(1, Math.floor(60_000 / columns.length));
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        for (let i = 0; i < rows.length; i += perStatement) {
          const chunk = rows.slice(i, i + perStatement);
          const params = [];
          const tuples = chunk.map((row) => `(${columns.map((c) => (params.push(row[c]), `$${params.length}`)).join(', ')})`);
          await client.query(`INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES ${tuples.join(', ')}`, params);
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    async query(sql, params = []) {
      return (await pool.query(sql, params)).rows;
    },
    /**
     * Autovacuum would vacuum and analyze a freshly loaded table within a minute in production (inserts
     * alone trigger it since PostgreSQL 13); do it now. The vacuum sets the visibility map, which
     * index-only scans (deep pages of a listing) rely on.
     */
    async analyze(table) {
      await pool.query(`VACUUM ANALYZE "${table}"`);
    },
    async close() {
      await pool.end();
    },
  };
}

function toSqlite(value) {
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

/** `$1, $2` placeholders (the PostgreSQL form the scenarios write) as SQLite `?`: each used once, in order. */
function toSqliteParams(sql) {
  return sql.replace(/\$\d+/g, '?');
}

const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Production runs PostgreSQL with autovacuum on; CI machines often turn it off. For the run it is on
 * (ALTER SYSTEM + pg_reload_conf); the answer puts back what was there: the previous ALTER SYSTEM value,
 * or none, so the configuration files decide again.
 */
export async function autovacuumOnForTheRun() {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    const [before] = (await admin.query("SELECT setting, sourcefile FROM pg_settings WHERE name = 'autovacuum'")).rows;
    await admin.query('ALTER SYSTEM SET autovacuum = on');
    await admin.query('SELECT pg_reload_conf()');
    const setByAlterSystem = (before?.sourcefile ?? '').endsWith('postgresql.auto.conf');
    return {
      before: before?.setting,
      async restore() {
        const restorer = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
        await restorer.connect();
        try {
          await restorer.query(setByAlterSystem ? `ALTER SYSTEM SET autovacuum = ${before.setting === 'on' ? 'on' : 'off'}` : 'ALTER SYSTEM RESET autovacuum');
          await restorer.query('SELECT pg_reload_conf()');
        } finally {
          await restorer.end();
        }
      },
    };
  } finally {
    await admin.end();
  }
}

/** Live and dead row versions per table of one database (pg_stat_user_tables), most dead first. */
export async function deadTuples(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // Statistics reach pg_stat_* within a second of a transaction's end.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const { rows } = await client.query(
      'SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, autoanalyze_count FROM pg_stat_user_tables ORDER BY n_dead_tup DESC, relname',
    );
    return rows.map((r) => ({ table: r.relname, live: Number(r.n_live_tup), dead: Number(r.n_dead_tup), autovacuums: Number(r.autovacuum_count) }));
  } finally {
    await client.end();
  }
}
