import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import Redis from 'ioredis';
import { DIST, freePort, runNode, startNode } from './processes.mjs';

/** As `npm run start:prod` and the Dockerfile run the service. */
export const START_PROD_FLAGS = ['--max-semi-space-size=1'];

const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * A fresh, isolated deployment: its own temp directory (blobs and, for SQLite, the database file),
 * a fresh PostgreSQL database when asked for, and its own Redis key prefix. `dispose` removes all
 * of it, including this run's Redis keys (and nothing else: Redis is shared).
 */
export async function createEnvironment(db, label, overrides = {}) {
  const runId = `bench_${label}_${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const workDir = mkdtempSync(join(tmpdir(), `fss-bench-${label}-`));
  let databaseUrl = `sqlite:${join(workDir, 'storage.sqlite')}`;
  let dropDatabase = async () => {};
  if (db === 'postgres') {
    await withAdmin((admin) => admin.query(`CREATE DATABASE "${runId}"`));
    const url = new URL(POSTGRES_ADMIN_URL);
    url.pathname = `/${runId}`;
    databaseUrl = url.toString();
    dropDatabase = () => withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS "${runId}" WITH (FORCE)`));
  }
  const redisKeyPrefix = runId.replaceAll('_', '-');
  const env = {
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    REDIS_KEY_PREFIX: redisKeyPrefix,
    STORAGE_DIR: join(workDir, 'blobs'),
    URL_SIGNING_SECRET: randomBytes(32).toString('hex'),
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    RATE_LIMITS_ENABLED: 'false',
    LOG_LEVEL: 'warn',
    ...overrides,
  };
  const environment = {
    db,
    env,
    workDir,
    databaseUrl,
    storageDir: env.STORAGE_DIR,
    server: null,
    /** Starts dist/main.js on a free port; the server is the process whose memory is measured. */
    async startServer(extra = {}, { nodeFlags = START_PROD_FLAGS } = {}) {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const server = await startNode(resolve(DIST, 'main.js'), [], { ...env, ...extra, PORT: String(port), PUBLIC_BASE_URL: url }, {
        readyText: 'listening on',
        name: 'dist/main.js',
        // BENCH_SERVER_NODE_FLAGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the server under test
        // (Node refuses --cpu-prof in NODE_OPTIONS).
        nodeFlags: [...nodeFlags, ...(process.env.BENCH_SERVER_NODE_FLAGS ?? '').split(' ').filter(Boolean)],
      });
      environment.server = { ...server, url, port };
      return environment.server;
    },
    async cli(args, { timeoutMs } = {}) {
      const result = await runNode(resolve(DIST, 'cli.js'), args, env, { timeoutMs });
      let json = null;
      try {
        json = JSON.parse(result.stdout.trim().split('\n').pop());
      } catch {
        // reported below with the raw output
      }
      if (result.code !== 0 || json === null) {
        throw new Error(`cli ${args.join(' ')} failed (exit ${result.code}): ${result.stdout}${result.stderr}`.slice(0, 2000));
      }
      return { ...result, json };
    },
    async createAccount(name) {
      const { json } = await environment.cli(['accounts', 'create', '--name', name, '--plan', 'enterprise']);
      return { accountId: json.account_id, userId: json.user_id, apiKey: json.api_key, auth: { authorization: `Bearer ${json.api_key}` } };
    },
    async dispose() {
      await environment.server?.stop().catch(() => undefined);
      await dropDatabase().catch((error) => process.stderr.write(`could not drop ${runId}: ${error.message}\n`));
      await deleteRedisKeys(redisKeyPrefix).catch(() => undefined);
      rmSync(workDir, { recursive: true, force: true });
    },
  };
  return environment;
}

async function withAdmin(work) {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

/** Removes this run's keys only (SCAN by prefix), never anything else in the shared Redis. */
async function deleteRedisKeys(prefix) {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
