import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHoldableProxy } from '../../support/holdable-proxy.js';
import { startS3 } from '../../support/s3.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';

describe('GET /health', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('reports the database and Redis up, without an API key', async () => {
    const res = await t.http().get('/health');
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.data.status).toBe('ok');
    expect(res.body.data.info).toMatchObject({ database: { status: 'up' }, redis: { status: 'up' } });
  });

  it('lets requests that arrive together share one check, so a flood of them does not query the database each', async () => {
    // The database pings of the checks, counted apart from the statements the relay, sweeps and heartbeats send
    // meanwhile (db_statements_total counts those too, and more of them the longer a loaded machine takes).
    const { DataSource } = await import('typeorm');
    const dataSource = t.app.get(DataSource);
    const query = dataSource.query.bind(dataSource);
    let pings = 0;
    dataSource.query = ((sql: string, ...rest: unknown[]) => {
      if (sql === 'SELECT 1') pings++;
      return (query as (sql: string, ...rest: unknown[]) => Promise<unknown>)(sql, ...rest);
    }) as typeof dataSource.query;
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => t.http().get('/health')));
      expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
      expect(pings).toBeGreaterThan(0);
      // The 20 checks, a handful of pings at most.
      expect(pings).toBeLessThan(10);
      expect(answers[19].body.data.info).toMatchObject({ database: { status: 'up' }, redis: { status: 'up' }, storage: { status: 'up' } });
    } finally {
      dataSource.query = query;
    }
  });

  it('answers 503 naming the database when it is gone, while GET /health/live, the liveness probe, still answers 200', async () => {
    const separate = await startTestApp();
    try {
      const { DataSource } = await import('typeorm');
      await separate.app.get(DataSource).destroy();
      const res = await separate.http().get('/health');
      expect(res.status).toBe(503);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.body.error.details).toMatchObject({ database: { status: 'down' } });
      // Restarting the process would not bring the database back.
      const live = await separate.http().get('/health/live');
      expect(live.status).toBe(200);
      expect(live.body).toEqual({ success: true, data: { status: 'ok' } });
    } finally {
      await separate.close().catch(() => undefined);
    }
  });
});

describe('GET /health and the blob storage', () => {
  it('answers 503 naming the storage when the local blob directory cannot take files, and 200 again once it can', async () => {
    const t = await startTestApp();
    try {
      expect((await t.http().get('/health').expect(200)).body.data.info).toMatchObject({ storage: { status: 'up' } });
      // The blob directory replaced by a file: as a disk that is gone, no upload can be stored.
      rmSync(t.config.storage.dir, { recursive: true, force: true });
      writeFileSync(t.config.storage.dir, 'not a directory');
      const down = await t.http().get('/health').timeout(5000);
      expect(down.status).toBe(503);
      expect(down.body.error.details).toMatchObject({ storage: { status: 'down' }, database: { status: 'up' }, redis: { status: 'up' } });

      rmSync(t.config.storage.dir);
      mkdirSync(t.config.storage.dir);
      expect((await t.http().get('/health').expect(200)).body.data.info).toMatchObject({ storage: { status: 'up' } });
    } finally {
      await t.close();
    }
  });

  it('answers within seconds, 503 naming the storage, while S3 does not answer, and 200 once it does again', async () => {
    const s3 = await startS3();
    const proxy = await startHoldableProxy(s3.port);
    const t = await startTestApp(s3.env(proxy.port));
    try {
      expect((await t.http().get('/health').expect(200)).body.data.info).toMatchObject({ storage: { status: 'up' } });
      proxy.hold();
      const started = Date.now();
      const down = await t.http().get('/health').timeout(10_000);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(down.status).toBe(503);
      expect(down.body.error.details).toMatchObject({ storage: { status: 'down' } });

      proxy.release();
      await eventually(async () => (await t.http().get('/health')).status === 200, 15_000, '/health to recover');
    } finally {
      await t.close();
      await proxy.close();
      await s3.close();
    }
  });
});
