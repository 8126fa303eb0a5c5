import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIST, runNode } from '../../support/processes.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';

/**
 * PORT=0 asks the system for a free port. The server is started here rather than by startServerProcess, which
 * chooses the port and PUBLIC_BASE_URL itself: what is under test is the line the server prints and the links it
 * hands out when neither is known beforehand.
 */
describe('the server started with PORT=0 and no PUBLIC_BASE_URL', () => {
  let environment: TestEnvironment;

  beforeAll(async () => {
    environment = await createTestEnvironment({ PORT: '0' });
  });
  afterAll(() => environment.dispose());

  it('says which port the system chose, answers there, and hands out download links that reach it', async () => {
    const child = spawn(process.execPath, [resolve(DIST, 'main.js')], { env: { PATH: process.env.PATH ?? '', ...environment.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise((done) => child.once('exit', done));
    try {
      const deadline = Date.now() + 45_000;
      while (!output.includes('listening on')) {
        if (child.exitCode !== null) throw new Error(`dist/main.js exited with ${child.exitCode}:\n${output}`);
        if (Date.now() > deadline) throw new Error(`dist/main.js did not listen within 45 s:\n${output}`);
        await new Promise((done) => setTimeout(done, 100));
      }
      const [, baseUrl, port] = /listening on (\S+) \(port (\d+)\)/.exec(output)!;
      expect(Number(port)).toBeGreaterThan(0);
      expect(baseUrl).toBe(`http://localhost:${port}`);
      expect(output).toContain(`API docs at http://localhost:${port}/docs`);
      expect((await fetch(`${baseUrl}/health`)).status).toBe(200);

      const created = await runNode('cli.js', ['accounts', 'create', '--name', 'Ada', '--plan', 'free'], environment.env);
      expect(created.code, created.stderr).toBe(0);
      const form = new FormData();
      form.append('file', new Blob(['quarterly numbers']), 'report.txt');
      const upload = await fetch(`${baseUrl}/v1/files/upload`, { method: 'POST', headers: { Authorization: `Bearer ${JSON.parse(created.stdout).api_key}` }, body: form });
      expect(upload.status).toBe(200);
      const downloadUrl = ((await upload.json()) as { data: { download_url: string } }).data.download_url;
      expect(downloadUrl.startsWith(`${baseUrl}/v1/files/`)).toBe(true);
      expect(await (await fetch(downloadUrl)).text()).toBe('quarterly numbers');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
