import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../../support/accounts.js';
import { runNode, type ServerProcess, startServerProcess } from '../../support/processes.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { sleep } from '../../support/time.js';
import { uploadOk } from '../../support/uploads.js';

interface LogLine {
  level: number;
  msg: string;
}

const PINO_ERROR = 50;
const PINO_DEBUG = 20;

/** Asks for `url`, reads the first chunk of the body, then hangs up. */
function downloadAndHangUp(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(error)));
    req.end();
  });
}

describe('a client that goes away mid-download', () => {
  let environment: TestEnvironment;
  let server: ServerProcess;
  let downloadUrl: string;

  beforeAll(async () => {
    environment = await createTestEnvironment({ LOG_LEVEL: 'debug' });
    server = await startServerProcess(environment.env);
    const created = await runNode('cli.js', ['accounts', 'create', '--name', 'Aborter', '--plan', 'enterprise'], environment.env);
    const key = JSON.parse(created.stdout).api_key as string;
    const file = await uploadOk(server as never, bearer(key), Buffer.alloc(16 * 1024 * 1024, 7), { name: 'big.bin' });
    downloadUrl = file.download_url;
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await environment?.dispose();
  });

  it('is logged at debug level, not as an unhandled error', async () => {
    for (let i = 0; i < 10; i++) await downloadAndHangUp(downloadUrl);
    // The server notices each hang-up on its own schedule; give the last one time to be logged.
    let lines: LogLine[] = [];
    for (let i = 0; i < 100; i++) {
      lines = server
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as LogLine);
      if (lines.filter((l) => l.msg.startsWith('Client went away')).length >= 10) break;
      await sleep(100);
    }
    expect(lines.filter((l) => l.level >= PINO_ERROR)).toEqual([]);
    const wentAway = lines.filter((l) => l.msg.startsWith('Client went away'));
    expect(wentAway).toHaveLength(10);
    expect(wentAway.every((l) => l.level === PINO_DEBUG)).toBe(true);
    // The server is fine afterwards: a whole download still succeeds.
    const whole = await fetch(downloadUrl);
    expect(whole.status).toBe(200);
    expect((await whole.arrayBuffer()).byteLength).toBe(16 * 1024 * 1024);
  });
});
