import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIST } from '../../support/processes.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';

describe('the command line when nothing reads its answer', () => {
  let environment: TestEnvironment;

  beforeAll(async () => {
    environment = await createTestEnvironment();
  });
  afterAll(() => environment.dispose());

  it('says as JSON on stderr that the answer is lost, exit code 1, rather than a stack trace for EPIPE', async () => {
    // As `node dist/cli.js accounts create … | head -c0`: the reading end of stdout is closed before the answer comes.
    const child = spawn(process.execPath, [resolve(DIST, 'cli.js'), 'accounts', 'create', '--name', 'Ada', '--plan', 'free'], {
      env: { PATH: process.env.PATH ?? '', ...environment.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const code = await new Promise((done) => child.once('exit', done));
    expect(code).toBe(1);
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(stderr).error).toEqual({ code: 'output_failed', message: 'The command ran, but its answer could not be written to stdout (EPIPE) and is lost' });
  });
});
