import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { startServerProcess } from '../../support/processes.js';
import { createTestEnvironment } from '../../support/test-app.js';
import { sleep } from '../../support/time.js';

describe('graceful shutdown', () => {
  it('on SIGTERM stops listening but answers the request already in flight, then exits 0', async () => {
    const environment = await createTestEnvironment({ LOG_LEVEL: 'warn' });
    try {
      const server = await startServerProcess(environment.env);
      const { port } = new URL(server.url);
      // A request whose body is still arriving when the signal comes.
      const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/v1/api-keys', headers: { 'Content-Type': 'application/json', 'Content-Length': '40' } }, (res) => {
          let body = '';
          res.on('data', (chunk) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.write('{"name": "slow", ');
        setTimeout(() => req.end('"scopes": ["read"]}'.padEnd(23, ' ')), 1500);
      });
      await sleep(300);
      server.child.kill('SIGTERM');
      await sleep(300);
      await expect(fetch(`${server.url}/health`)).rejects.toThrow();
      const { status, body } = await answer;
      expect(status).toBe(401);
      expect(JSON.parse(body).error.code).toBe('authentication_failed');
      const exit = await Promise.race([server.exited, sleep(10_000).then(() => 'timeout' as const)]);
      expect(exit).toEqual({ code: 0, signal: null });
    } finally {
      await environment.dispose();
    }
  });
});
