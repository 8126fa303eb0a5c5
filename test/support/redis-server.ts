import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './processes.js';
import { startTestAppHolding, type TestApp } from './test-app.js';

/**
 * A Redis of the test's own on a free port, for tests that stop and restart Redis: the shared
 * Redis on 6379 is never touched.
 */
export class OwnRedis {
  private process: ChildProcess | null = null;
  private readonly dir = mkdtempSync(join(tmpdir(), 'fss-redis-'));

  private constructor(readonly port: number) {}

  static async start(): Promise<OwnRedis> {
    const redis = new OwnRedis(await freePort());
    await redis.restart();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async restart(): Promise<void> {
    if (this.process) return;
    this.process = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], {
      stdio: 'ignore',
    });
    const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    for (let i = 0; i < 100; i++) {
      try {
        await client.connect();
        await client.ping();
        client.disconnect();
        return;
      } catch {
        client.disconnect();
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error(`redis-server on port ${this.port} did not start`);
  }

  async stop(): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = null;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface TestAppWithOwnRedis extends TestApp {
  redis: OwnRedis;
}

/** The test application on a Redis of its own, which the test may stop and restart; close() disposes both. */
export async function startTestAppWithOwnRedis(overrides: Record<string, string> = {}): Promise<TestAppWithOwnRedis> {
  const redis = await OwnRedis.start();
  return { ...(await startTestAppHolding({ REDIS_URL: redis.url, ...overrides }, () => redis.dispose())), redis };
}
