import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { UploadReservationEntity } from '../../../src/modules/files/upload/upload-reservation.entity.js';
import { createAccount } from '../../support/accounts.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { startServerProcess } from '../../support/processes.js';
import { createTestEnvironment } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';

/** True when a new TCP connection to the port is refused. */
const refusesConnections = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });

describe('graceful shutdown', () => {
  // A second signal is routine: npm forwards Ctrl-C to a server that had it from the terminal already.
  it.each([
    ['SIGTERM', ['SIGTERM']],
    ['SIGTERM twice', ['SIGTERM', 'SIGTERM']],
    ['SIGINT then SIGTERM', ['SIGINT', 'SIGTERM']],
  ] as const)('on %s stops listening but finishes the upload already in flight, then exits 0', async (_, signals) => {
    const environment = await createTestEnvironment({ LOG_LEVEL: 'warn' });
    const context = await startOperatorContext(environment.env);
    try {
      const server = await startServerProcess(environment.env);
      const owner = await createAccount(context);
      const { port } = new URL(server.baseUrl);
      // An authenticated upload whose body is still arriving when the signal comes.
      const boundary = 'shutdown-boundary';
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.txt"\r\nContent-Type: text/plain\r\n\r\n`;
      // Over 1 MiB in all: such an upload reserves its quota as soon as it starts (a smaller one reserves nothing
      // while it streams), which is how the test sees it under way.
      const [first, rest] = [`the first half, ${'x'.repeat(1024 * 1024)}`, 'and the rest after SIGTERM'];
      const tail = `\r\n--${boundary}--\r\n`;
      let finishBody: () => void = () => undefined;
      const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v1/files/upload',
            headers: { ...owner.auth, 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Content-Length': Buffer.byteLength(head + first + rest + tail) },
          },
          (res) => {
            let body = '';
            res.on('data', (chunk) => (body += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.write(head + first);
        finishBody = () => req.end(rest + tail);
      });
      // The server has started receiving it: its quota reservation exists.
      const reservations = context.get(DataSource).getRepository(UploadReservationEntity);
      await eventually(async () => (await reservations.count()) === 1, 15_000, 'the upload to be under way');

      server.child.kill(signals[0]);
      await eventually(() => refusesConnections(Number(port)), 15_000, 'the server to stop accepting connections');
      for (const signal of signals.slice(1)) server.child.kill(signal);
      // Time for a repeated signal to take effect, were it to kill the process.
      await new Promise((resolve) => setTimeout(resolve, 300));
      finishBody();
      const { status, body } = await answer;
      expect(status, body).toBe(200);
      const file = JSON.parse(body).data;
      expect(file).toMatchObject({ name: 'slow.txt', size: Buffer.byteLength(first + rest) });
      expect(await server.exited).toEqual({ code: 0, signal: null });
      expect(await context.get(DataSource).getRepository(FileEntity).findOneBy({ id: file.id })).toMatchObject({ name: 'slow.txt', state: 'active' });
    } finally {
      await context.close();
      await environment.dispose();
    }
  });

  it('on SIGTERM answers a waiting long poll of the event feed at once, then exits 0', async () => {
    const environment = await createTestEnvironment({ LOG_LEVEL: 'warn' });
    const context = await startOperatorContext(environment.env);
    try {
      const server = await startServerProcess(environment.env);
      const owner = await createAccount(context);
      const poll = fetch(`${server.baseUrl}/v1/events?wait=30`, { headers: owner.auth });
      // Let the poll reach its wait before the signal comes.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const signalled = Date.now();
      server.child.kill('SIGTERM');
      const answer = await poll;
      expect(answer.status).toBe(200);
      expect(await answer.json()).toMatchObject({ success: true, data: [], next_cursor: expect.any(String) });
      expect(await server.exited).toEqual({ code: 0, signal: null });
      // Not at the poll's 30-second deadline (29 s after the signal): bounded by it, not by a guess at the machine's speed.
      expect(Date.now() - signalled).toBeLessThan(25_000);
    } finally {
      await context.close();
      await environment.dispose();
    }
  });

  // A browser's preconnect, or a load balancer's warm pool, opens connections before it has a request for them. Node's
  // close() leaves such a connection open (it is not idle: it has not begun), so the shutdown waited for the connection's
  // idle limit (60 s) and was cut off by the 30 s grace period with exit code 1.
  it('on SIGTERM closes a connection that has not sent a request yet, and exits 0 within its grace period', async () => {
    const environment = await createTestEnvironment({ LOG_LEVEL: 'warn' });
    try {
      const server = await startServerProcess(environment.env);
      const preconnected = connect(Number(new URL(server.baseUrl).port), '127.0.0.1');
      await new Promise((resolve) => preconnected.once('connect', resolve));
      const closedByServer = new Promise((resolve) => preconnected.once('close', resolve));
      preconnected.on('error', () => undefined);
      server.child.kill('SIGTERM');
      expect(await server.exited).toEqual({ code: 0, signal: null });
      expect(server.output()).not.toContain('Shutdown took longer');
      await closedByServer;
    } finally {
      await environment.dispose();
    }
  });
});
