import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/test-app.js';

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

  it('answers 503 naming the database when it is gone', async () => {
    const separate = await startTestApp();
    try {
      const { DataSource } = await import('typeorm');
      await separate.app.get(DataSource).destroy();
      const res = await separate.http().get('/health');
      expect(res.status).toBe(503);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.body.error.details).toMatchObject({ database: { status: 'down' } });
    } finally {
      await separate.close().catch(() => undefined);
    }
  });
});
