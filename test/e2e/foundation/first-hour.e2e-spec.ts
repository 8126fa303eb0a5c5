import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVELOPMENT_SECRETS_FILE } from '../../../src/config/app-config.js';
import { DIST, freePort } from '../../support/processes.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';

/**
 * A new user's first hour, as the README tells it: a `.env` in the working directory and nothing else
 * set (so NODE_ENV is development), the server and the CLI started there, links that follow PORT, and
 * development secrets that survive a restart. These start dist/main.js and dist/cli.js themselves,
 * because the helpers in test/support set PORT, PUBLIC_BASE_URL and the secrets, which is what is
 * under test here.
 */
describe("a new user's first hour", () => {
  let environment: TestEnvironment;
  let port: number;
  let server: { child: ChildProcess; output: () => string } | undefined;

  /** Starts `node dist/main.js` in the environment's directory with only PATH set, and waits until it listens. */
  async function startServer(): Promise<{ child: ChildProcess; output: () => string }> {
    const child = spawn(process.execPath, [resolve(DIST, 'main.js')], { cwd: environment.workDir, env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const deadline = Date.now() + 45_000;
    while (!output.includes('listening on')) {
      if (child.exitCode !== null) throw new Error(`dist/main.js exited with ${child.exitCode}:\n${output}`);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`dist/main.js did not listen within 45 s:\n${output}`);
      }
      await new Promise((done) => setTimeout(done, 100));
    }
    return { child, output: () => output };
  }

  async function stopServer(): Promise<void> {
    const child = server?.child;
    server = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    await exited;
  }

  /** `node dist/cli.js …` in the environment's directory with only PATH set. */
  function cli(...args: string[]) {
    return spawnSync(process.execPath, [resolve(DIST, 'cli.js'), ...args], { cwd: environment.workDir, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8', timeout: 60_000 });
  }

  beforeAll(async () => {
    environment = await createTestEnvironment();
    port = await freePort();
    const { DATABASE_URL, REDIS_URL, REDIS_KEY_PREFIX } = environment.env;
    // What a user copies from .env.example and edits; the cron value needs its quotes in a shell, and Node reads them too.
    writeFileSync(
      join(environment.workDir, '.env'),
      [`PORT=${port}`, `DATABASE_URL=${DATABASE_URL}`, `REDIS_URL=${REDIS_URL}`, `REDIS_KEY_PREFIX=${REDIS_KEY_PREFIX}`, 'TRASH_PURGE_CRON="*/10 * * * *"', 'LOG_LEVEL=warn', ''].join('\n'),
    );
  });
  afterAll(async () => {
    await stopServer();
    await environment?.dispose();
  });

  it('serves on the PORT of .env, hands out links on that port, and keeps them valid across a restart', async () => {
    server = await startServer();
    const secretsFile = join(environment.workDir, DEVELOPMENT_SECRETS_FILE);
    expect(server.output()).toContain(`listening on http://localhost:${port} (port ${port}); API docs at http://localhost:${port}/docs`);
    expect(server.output()).toContain(`URL_SIGNING_SECRET and SECRETS_ENCRYPTION_KEY generated and kept in ${secretsFile}`);
    expect(statSync(secretsFile).mode & 0o777).toBe(0o600);

    // The CLI reads the same .env: the account it makes is in the server's database.
    const created = cli('accounts', 'create', '--name', 'Ada', '--plan', 'free');
    expect(created.status, created.stderr).toBe(0);
    const { api_key: key } = JSON.parse(created.stdout) as { api_key: string };
    const auth = { Authorization: `Bearer ${key}` };

    const form = new FormData();
    form.append('file', new Blob(['quarterly numbers']), 'report.txt');
    const upload = await fetch(`http://127.0.0.1:${port}/v1/files/upload`, { method: 'POST', headers: auth, body: form });
    expect(upload.status).toBe(200);
    const downloadUrl = ((await upload.json()) as { data: { download_url: string } }).data.download_url;
    expect(downloadUrl.startsWith(`http://localhost:${port}/v1/files/`)).toBe(true);
    expect(await (await fetch(downloadUrl)).text()).toBe('quarterly numbers');

    await stopServer();
    server = await startServer();
    expect(server.output()).toContain(`URL_SIGNING_SECRET and SECRETS_ENCRYPTION_KEY read from ${secretsFile}`);
    const again = await fetch(downloadUrl);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe('quarterly numbers');
  });

  it('refuses a local webhook receiver saying which setting allows it', async () => {
    server ??= await startServer();
    const created = cli('accounts', 'create', '--name', 'Hook', '--plan', 'free');
    const { api_key: key } = JSON.parse(created.stdout) as { api_key: string };
    const res = await fetch(`http://127.0.0.1:${port}/v1/webhooks`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:4000/hooks', events: ['file.uploaded'] }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.message).toContain('WEBHOOK_ALLOW_PRIVATE_URLS=true allows http:// and local addresses for local development');
  });

  it('describes the API key in the OpenAPI document as an opaque fss_ key, not a JWT', async () => {
    server ??= await startServer();
    const document = (await (await fetch(`http://127.0.0.1:${port}/docs-json`)).json()) as { components: { securitySchemes: Record<string, { bearerFormat?: string; description?: string }> } };
    const scheme = document.components.securitySchemes['api-key'];
    expect(scheme.bearerFormat).not.toMatch(/jwt/i);
    expect(scheme.description).toContain('fss_');
  });

  it("runs the Dockerfile's HEALTHCHECK against the PORT the service listens on", async () => {
    server ??= await startServer();
    const dockerfile = readFileSync('Dockerfile', 'utf8');
    const command = /^HEALTHCHECK .*? CMD (.+)$/m.exec(dockerfile)?.[1];
    expect(command).toBeDefined();
    const check = (env: Record<string, string>) => spawnSync('sh', ['-c', command!], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 }).status;
    expect(check({ PORT: String(port) })).toBe(0);
    expect(check({ PORT: String(await freePort()) })).not.toBe(0);
  });
});

describe('the command line under npm, as the README uses it', () => {
  let environment: TestEnvironment;

  beforeAll(async () => {
    environment = await createTestEnvironment();
  });
  afterAll(() => environment?.dispose());

  it('prints exactly one JSON object with `npm run -s cli --`, so a shell can capture the key', () => {
    const env = { ...environment.env, PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? environment.workDir };
    const direct = spawnSync('npm', ['run', '-s', 'cli', '--', 'accounts', 'create', '--name', 'Ada', '--plan', 'free'], { env, encoding: 'utf8', timeout: 60_000 });
    expect(direct.status, direct.stderr).toBe(0);
    expect(Object.keys(JSON.parse(direct.stdout) as object).sort()).toEqual(['account_id', 'api_key', 'user_id']);

    // The README's capture: KEY=$(npm run -s cli -- accounts create ... | node -pe '...api_key')
    const captured = spawnSync(
      'sh',
      ['-c', `KEY=$(npm run -s cli -- accounts create --name Ada --plan free | node -pe 'JSON.parse(fs.readFileSync(0, "utf8")).api_key') && printf '%s' "$KEY"`],
      { env, encoding: 'utf8', timeout: 60_000 },
    );
    expect(captured.status, captured.stderr).toBe(0);
    expect(captured.stdout).toMatch(/^fss_[A-Za-z0-9_-]{43}$/);
  });
});

describe('a .env that cannot be read', () => {
  it('stops the server and the CLI with a message naming it, without a stack trace', async () => {
    const environment = await createTestEnvironment();
    try {
      mkdirSync(join(environment.workDir, '.env'));
      const run = (script: string, ...args: string[]) =>
        spawnSync(process.execPath, [resolve(DIST, script), ...args], { cwd: environment.workDir, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8', timeout: 30_000 });
      const server = run('main.js');
      expect(server.status).toBe(1);
      expect(server.stderr).toContain(`.env: ${join(environment.workDir, '.env')} cannot be read (EISDIR)`);
      expect(server.stderr).not.toMatch(/\n\s+at /);
      const cli = run('cli.js', 'db', 'migrate');
      expect(cli.status).toBe(1);
      expect(JSON.parse(cli.stderr.trim()).error).toEqual({ code: 'configuration_error', message: expect.stringContaining('.env: ') });
    } finally {
      await environment.dispose();
    }
  });
});
