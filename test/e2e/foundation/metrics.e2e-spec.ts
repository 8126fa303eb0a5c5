import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.factory.js';
import { loadConfig } from '../../../src/config/app-config.js';
import { startHoldableProxy } from '../../support/holdable-proxy.js';
import { createTestEnvironment } from '../../support/test-app.js';

describe('GET /metrics while the database does not answer', () => {
  // Only a database across the network can hang: PostgreSQL behind a proxy that stops passing bytes on.
  it('still answers promptly, with queue depths and without a stale outbox backlog, and reports the backlog again afterwards', async () => {
    const environment = await createTestEnvironment({}, { database: 'postgres' });
    const databaseUrl = new URL(environment.env.DATABASE_URL);
    const proxy = await startHoldableProxy(Number(databaseUrl.port || 5432));
    databaseUrl.hostname = '127.0.0.1';
    databaseUrl.port = String(proxy.port);
    const app = await createApp(loadConfig({ ...environment.env, DATABASE_URL: databaseUrl.toString() }));
    try {
      await app.listen(0, '127.0.0.1');
      const http = () => request(`http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`);
      expect((await http().get('/metrics').expect(200)).text).toContain('webhook_outbox_backlog{stage="outbox"} 0');

      proxy.hold();
      const started = Date.now();
      const scraped = await http().get('/metrics').timeout(10_000);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(scraped.status).toBe(200);
      expect(scraped.text).toContain('queue_jobs{queue="webhook-deliveries",state="waiting"}');
      // Unknown now: no number at all rather than the last one read.
      expect(scraped.text).not.toContain('webhook_outbox_backlog{');

      proxy.release();
      expect((await http().get('/metrics').timeout(10_000).expect(200)).text).toContain('webhook_outbox_backlog{stage="outbox"} 0');
    } finally {
      proxy.release();
      await app.close();
      await proxy.close();
      await environment.dispose();
    }
  });
});
