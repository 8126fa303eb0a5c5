import type { INestApplicationContext } from '@nestjs/common';
import { afterAll, beforeAll } from 'vitest';
import { createAccount, type TestAccount } from './accounts.js';
import { startOperatorContext } from './operator-context.js';
import { freePort, type ServerProcess, startServerProcess } from './processes.js';
import { startS3, type TestS3 } from './s3.js';
import { createTestEnvironment, type TestEnvironment } from './test-app.js';

export interface ServerProcesses {
  /** The bucket every process stores in, with `s3: true`; otherwise null (local disk). */
  s3: TestS3 | null;
  environment: TestEnvironment;
  /** The database and Redis as an operator sees them, for what the test reads behind the servers' backs. */
  context: INestApplicationContext;
  owner: TestAccount;
  /** Every process started, the first one by the fixture; each is SIGKILLed after the file. */
  servers: ServerProcess[];
  /** Starts one more built server (on `port`, e.g. a killed one's, or a free one) sharing the database, Redis and storage. */
  start(port?: number): Promise<ServerProcess>;
}

/**
 * Built server processes (dist/main.js) sharing one database, Redis and storage, for a describe block: the first is
 * started before its tests (it applies the migrations), with an operator context and an account. Their instances beat
 * every 300 ms, so a killed process's work is reclaimed within the test.
 */
export function useServerProcesses(assign: (processes: ServerProcesses) => void, options: { s3?: boolean } = {}): void {
  const servers: ServerProcess[] = [];
  let s3: TestS3 | null = null;
  let environment: TestEnvironment | undefined;
  let context: INestApplicationContext | undefined;
  beforeAll(async () => {
    if (options.s3) s3 = await startS3();
    const env = environment = await createTestEnvironment({ INSTANCE_HEARTBEAT_MS: '300', ...(s3 ? s3.env() : {}) });
    const start = async (port?: number) => {
      // A generous start-up guard: a loaded machine has taken more than 30 s.
      const server = await startServerProcess(env.env, port ?? (await freePort()), 90_000);
      servers.push(server);
      return server;
    };
    await start();
    context = await startOperatorContext(env.env);
    assign({ s3, environment: env, context, owner: await createAccount(context), servers, start });
  });
  afterAll(async () => {
    for (const server of servers) await server.stop('SIGKILL').catch(() => undefined);
    await context?.close();
    await environment?.dispose();
    await s3?.close();
  });
}
