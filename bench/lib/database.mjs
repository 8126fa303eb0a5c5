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
    /** Autovacuum would analyze a freshly loaded table within a minute in production; do it now. */
    async analyze(table) {
      await pool.query(`ANALYZE "${table}"`);
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
