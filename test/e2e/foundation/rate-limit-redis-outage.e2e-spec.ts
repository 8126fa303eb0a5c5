import type { INestApplicationContext } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { type ServerProcess, startServerProcess } from '../../support/processes.js';
import { OwnRedis } from '../../support/redis-server.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';

/** The server's log lines (JSON) from the rate limiter at `level` (pino: 30 info, 40 warn). */
function rateLimitLines(server: ServerProcess, level: number): string[] {
  return server
    .output()
    .split('\n')
    .filter((line) => {
      try {
        const entry = JSON.parse(line) as { context?: unknown; level?: unknown };
        return entry.context === 'RateLimit' && entry.level === level;
      } catch {
        return false;
      }
    });
}

describe('the rate limit while Redis is down, as the log tells it', () => {
  let ownRedis: OwnRedis;
  let environment: TestEnvironment;
  let server: ServerProcess;
  let context: INestApplicationContext;
  let account: TestAccount;

  beforeAll(async () => {
    ownRedis = await OwnRedis.start();
    environment = await createTestEnvironment({ REDIS_URL: ownRedis.url, LOG_LEVEL: 'info' });
    server = await startServerProcess(environment.env);
    context = await startOperatorContext(environment.env);
    account = await createAccount(context, { plan: 'free' });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await context?.close();
    await environment?.dispose();
    await ownRedis?.dispose();
  });

  const userInfo = () => fetch(`${server.baseUrl}/v1/user/info`, { headers: account.auth });

  /** Waits until the server has logged the answer to this request: the log is written in order, so everything said before it is out too. */
  const loggedAnswerTo = (answer: Response) =>
    eventually(async () => server.output().includes(answer.headers.get('x-request-id')!), 30_000, 'the request to be logged');

  it('warns once per outage, not once per request let through, and says when counting resumes', async () => {
    expect((await userInfo()).status).toBe(200);
    await ownRedis.stop();
    let during!: Response;
    for (let i = 0; i < 20; i++) {
      during = await userInfo();
      expect(during.status).toBe(200);
      expect(during.headers.get('x-ratelimit-remaining')).toBe('60');
    }
    await loggedAnswerTo(during);
    expect(rateLimitLines(server, 40)).toHaveLength(1);

    await ownRedis.restart();
    const counted = await eventually(async () => {
      const answer = await userInfo();
      return Number(answer.headers.get('x-ratelimit-remaining')) < 60 ? answer : null;
    }, 30_000, 'counting to resume');
    await loggedAnswerTo(counted);
    const resumed = rateLimitLines(server, 30);
    expect(resumed).toHaveLength(1);
    expect(resumed[0]).toMatch(/\b(2[0-9]|[3-9][0-9]) requests were let through uncounted/);
    expect(rateLimitLines(server, 40)).toHaveLength(1);
  });
});
