import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.factory.js';
import { loadConfig } from '../../../src/config/app-config.js';
import { startHoldableProxy } from '../../support/holdable-proxy.js';
import { createTestEnvironment, startTestApp } from '../../support/test-app.js';

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

describe('GET /metrics: request durations', () => {
  it('counts requests refused before routing, and keeps one series per route whatever ids or random paths are asked for', async () => {
    const testApp = await startTestApp();
    try {
      const http = testApp.http;
      await http().post('/v1/folders').set('Content-Type', 'application/json').send('{not json').expect(400);
      await http().post('/v1/folders').set('Content-Type', 'application/json').send(JSON.stringify({ name: 'x'.repeat(200 * 1024) })).expect(413);
      await http().get('/v1/files/%ff').expect(400);
      for (const n of [1, 2, 3]) {
        await http().get(`/no-such-page-${n}-${Math.random()}`).expect(404);
        await http().get(`/v1/files/file_${n}${Date.now()}`).expect(401);
      }
      const text = (await http().get('/metrics').expect(200)).text;

      expect(text).toContain('http_request_duration_seconds_count{method="POST",route="unmatched",status_code="400"} 1');
      expect(text).toContain('http_request_duration_seconds_count{method="POST",route="unmatched",status_code="413"} 1');
      expect(text).toContain('http_request_duration_seconds_count{method="GET",route="unmatched",status_code="400"} 1');
      const series = text.split('\n').filter((line) => line.startsWith('http_request_duration_seconds_count{'));
      expect(series.filter((line) => /no-such-page|file_\d/.test(line))).toEqual([]);
      expect(series.find((line) => line.includes('route="/v1/files/:file_id"'))).toContain('status_code="401"} 3');
    } finally {
      await testApp.close();
    }
  });

  it('keeps one series per queue dashboard route however the path is spelled (routing ignores case)', async () => {
    const admin = { username: 'ops', password: 'correct horse battery' };
    const testApp = await startTestApp({ ADMIN_USERNAME: admin.username, ADMIN_PASSWORD: admin.password });
    try {
      const spellings = ['/admin/queues', '/ADMIN/QUEUES', '/Admin/Queues', '/aDmIn/qUeUeS'];
      for (const base of spellings) {
        await testApp.http().get(`${base}/api/queues`).auth(admin.username, admin.password).expect(200);
        await testApp.http().get(`${base}/api/queues/webhook-deliveries/job-${Math.random()}`).auth(admin.username, admin.password).expect(404);
      }
      const text = (await testApp.http().get('/metrics').expect(200)).text;
      const series = text.split('\n').filter((line) => line.startsWith('http_request_duration_seconds_count{') && /queues/i.test(line));
      expect(series.sort()).toEqual([
        'http_request_duration_seconds_count{method="GET",route="/admin/queues/api/queues",status_code="200"} 4',
        'http_request_duration_seconds_count{method="GET",route="/admin/queues/api/queues/:queueName/:jobId",status_code="404"} 4',
      ]);
    } finally {
      await testApp.close();
    }
  });
});
