import { describe, expect, it } from 'vitest';
import { runNode } from '../../support/processes.js';
import { createTestEnvironment } from '../../support/test-app.js';

describe('service start-up (dist/main.js) without a Redis it can reach', () => {
  // PORT 0: were Redis reached, the server would start on a free port rather than on 3000.
  it.each([
    ['nothing listens at its port', 'redis://127.0.0.1:1', /REDIS_URL=redis:\/\/127\.0\.0\.1:1 \(connect ECONNREFUSED 127\.0\.0\.1:1\)/],
    ['its host name does not resolve', 'redis://no-such-host.invalid:6379', /REDIS_URL=redis:\/\/no-such-host\.invalid:6379 \(getaddrinfo (ENOTFOUND|EAI_AGAIN) no-such-host\.invalid\)/],
  ])('stops naming REDIS_URL and why the connection failed when %s', async (_, redisUrl, said) => {
    const environment = await createTestEnvironment({ REDIS_URL: redisUrl, PORT: '0' });
    try {
      const result = await runNode('main.js', [], environment.env);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(said);
      // What ioredis says once it has given up, whatever the reason: it told the operator nothing.
      expect(result.stderr).not.toContain('Connection is closed');
      expect(result.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await environment.dispose();
    }
  });
});
