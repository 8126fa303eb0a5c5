import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { NestExpressApplication } from '@nestjs/platform-express';
import pg from 'pg';
import request from 'supertest';
import { createApp } from '../../src/app.factory.js';
import { type AppConfig, loadConfig } from '../../src/config/app-config.js';
// Every answer a test receives is checked against openapi.json (see contract.ts).
import './contract.js';

export type TestDatabase = 'sqlite' | 'postgres';

/** Which database this run of the suite uses: TEST_DB=sqlite (default) or TEST_DB=postgres. */
export const TEST_DB: TestDatabase = process.env.TEST_DB === 'postgres' ? 'postgres' : 'sqlite';
const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestEnvironment {
  env: Record<string, string>;
  workDir: string;
  dispose(): Promise<void>;
}

/**
 * A fresh, isolated environment: its own database (a SQLite file or a new PostgreSQL database),
 * its own blob directory and its own Redis key prefix, so test files can run side by side. The
 * database is this run's TEST_DB unless `options.database` names one.
 */
export async function createTestEnvironment(overrides: Record<string, string> = {}, options: { database?: TestDatabase } = {}): Promise<TestEnvironment> {
  const database = options.database ?? TEST_DB;
  const runId = `t${Date.now().toString(36)}${randomBytes(4).toString('hex')}`;
  const workDir = mkdtempSync(join(tmpdir(), 'fss-test-'));
  let databaseUrl = `sqlite:${join(workDir, 'storage.sqlite')}`;
  let dropDatabase = async () => {};
  if (database === 'postgres') {
    const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${runId}"`);
    await admin.end();
    const url = new URL(POSTGRES_ADMIN_URL);
    url.pathname = `/${runId}`;
    databaseUrl = url.toString();
    dropDatabase = async () => {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${runId}" WITH (FORCE)`);
      await client.end();
    };
  }
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: `fss-${runId}`,
    STORAGE_DIR: join(workDir, 'blobs'),
    URL_SIGNING_SECRET: randomBytes(32).toString('hex'),
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...overrides,
  };
  return {
    env,
    workDir,
    async dispose() {
      await dropDatabase();
      rmSync(workDir, { recursive: true, force: true });
    },
  };
}

export interface TestApp {
  app: NestExpressApplication;
  config: AppConfig;
  baseUrl: string;
  environment: TestEnvironment;
  http(): ReturnType<typeof request>;
  close(): Promise<void>;
}

/**
 * Starts the real HTTP application on a free port against a fresh environment; `adjust` changes what the
 * environment cannot express (e.g. where "Debian's default" clamd socket is).
 */
export async function startTestApp(overrides: Record<string, string> = {}, adjust: (config: AppConfig) => AppConfig = (config) => config): Promise<TestApp> {
  const environment = await createTestEnvironment(overrides);
  const config = adjust(loadConfig(environment.env));
  const app = await createApp(config);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const baseUrl = `http://127.0.0.1:${address.port}`;
  return {
    app,
    config,
    baseUrl,
    environment,
    http: () => request(baseUrl),
    async close() {
      try {
        await app.close();
      } finally {
        await environment.dispose();
      }
    },
  };
}

/**
 * A test application on a resource of its own (a bucket, a Redis) that `env` points it at: closing the application
 * releases the resource too, and a start that fails releases it at once.
 */
export async function startTestAppHolding(env: Record<string, string>, release: () => Promise<void>): Promise<TestApp> {
  try {
    const t = await startTestApp(env);
    return {
      ...t,
      async close() {
        try {
          await t.close();
        } finally {
          await release();
        }
      },
    };
  } catch (error) {
    await release();
    throw error;
  }
}
