import type { INestApplicationContext } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { type ServerProcess, startServerProcess } from '../../support/processes.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';

interface LogLine {
  level: number;
  msg: string;
  req?: { id: string; method: string; url: string };
  res?: { statusCode: number };
  responseTime?: number;
}

/** The JSON log lines a server wrote about one request id. */
function linesAbout(server: ServerProcess, requestId: string): LogLine[] {
  return server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(requestId))
    .map((line) => JSON.parse(line) as LogLine);
}

describe.each([
  ['warn', false],
  ['info', true],
])('an operator running the server at LOG_LEVEL=%s', (level, logsSuccess) => {
  let environment: TestEnvironment;
  let context: INestApplicationContext;
  let server: ServerProcess;
  let owner: TestAccount;

  beforeAll(async () => {
    environment = await createTestEnvironment({ LOG_LEVEL: level, ADMIN_USERNAME: 'ops', ADMIN_PASSWORD: 'correct horse battery' });
    // The server migrates the database; the account is made after, as an operator would with the CLI.
    server = await startServerProcess(environment.env);
    context = await startOperatorContext(environment.env);
    owner = await createAccount(context);
  });
  afterAll(async () => {
    await server?.stop();
    await context?.close();
    await environment.dispose();
  });

  it('sees a refused request logged once as a warning, with its request id, method and URL', async () => {
    const res = await fetch(`${server.baseUrl}/v1/files/file_nope?x=1`, { headers: { ...owner.auth, 'X-Request-Id': `refused-${level}` } });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).toBe(`refused-${level}`);
    await eventually(async () => linesAbout(server, `refused-${level}`).length > 0, 5_000, 'the log line');
    const lines = linesAbout(server, `refused-${level}`);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, msg: 'request completed', req: { id: `refused-${level}`, method: 'GET', url: '/v1/files/file_nope?x=1' }, res: { statusCode: 404 } });
    expect(typeof lines[0].responseTime).toBe('number');
    expect(JSON.stringify(lines[0])).not.toContain(owner.apiKey);
  });

  it('never sees the signature of a download link in the log, however the query spells it', async () => {
    const query = 'expires=1&signature=first-secret&%73ignature=second-secret&x=1&signature=third-secret';
    const res = await fetch(`${server.baseUrl}/v1/files/file_nope/download?${query}`, { headers: { 'X-Request-Id': `signed-${level}` } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    await eventually(async () => linesAbout(server, `signed-${level}`).length > 0, 5_000, 'the log line');
    const [line] = linesAbout(server, `signed-${level}`);
    expect(line.req?.url).toBe('/v1/files/file_nope/download?expires=1&signature=[redacted]&%73ignature=[redacted]&x=1&signature=[redacted]');
    expect(JSON.stringify(linesAbout(server, `signed-${level}`))).not.toContain('secret');
  });

  it('never sees an API key sent in the query string in the log, whatever the parameter is called', async () => {
    const query = `api_key=${owner.apiKey}&access_token=tok-secret&q=${encodeURIComponent(owner.apiKey)}&page=2`;
    const res = await fetch(`${server.baseUrl}/v1/files?${query}`, { headers: { 'X-Request-Id': `keyed-${level}` } });
    expect(res.status).toBe(401);
    await eventually(async () => linesAbout(server, `keyed-${level}`).length > 0, 5_000, 'the log line');
    const [line] = linesAbout(server, `keyed-${level}`);
    expect(line.req?.url).toBe('/v1/files?api_key=[redacted]&access_token=[redacted]&q=[redacted]&page=2');
    const logged = JSON.stringify(linesAbout(server, `keyed-${level}`));
    expect(logged).not.toContain(owner.apiKey);
    expect(logged).not.toContain('tok-secret');
  });

  it('never sees the token of a share link in the log: it opens the link for as long as the link lives', async () => {
    const form = new FormData();
    form.append('file', new Blob(['shared bytes']), 'shared.txt');
    const uploaded = await fetch(`${server.baseUrl}/v1/files/upload`, { method: 'POST', headers: owner.auth, body: form });
    const fileId = ((await uploaded.json()) as { data: { id: string } }).data.id;
    const created = await fetch(`${server.baseUrl}/v1/shares`, {
      method: 'POST',
      headers: { ...owner.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ file_id: fileId, password: 'share secret' }),
    });
    const token = new URL(((await created.json()) as { data: { url: string } }).data.url).pathname.split('/').pop()!;
    // Without the password: refused, so logged at either level.
    const paths = [`/s/${token}`, `/s/${token}/download?x=1`, `/S/${token}/`];
    for (const [i, path] of paths.entries()) {
      const res = await fetch(`${server.baseUrl}${path}`, { headers: { 'X-Request-Id': `shared-${i}-${level}` } });
      expect(res.status, path).toBe(401);
    }
    await eventually(async () => paths.every((_, i) => linesAbout(server, `shared-${i}-${level}`).length > 0), 5_000, 'the log lines');
    expect(paths.map((_, i) => linesAbout(server, `shared-${i}-${level}`)[0].req?.url)).toEqual(['/s/[redacted]', '/s/[redacted]/download?x=1', '/S/[redacted]/']);
    expect(server.output()).not.toContain(token);
  });

  it('sees a body refused before routing, and every queue dashboard request (a wrong password, an action), logged like any other', async () => {
    const badJson = await fetch(`${server.baseUrl}/v1/folders`, {
      method: 'POST',
      headers: { ...owner.auth, 'Content-Type': 'application/json', 'X-Request-Id': `bad-json-${level}` },
      body: '{"name": ',
    });
    expect(badJson.status).toBe(400);
    const guess = await fetch(`${server.baseUrl}/admin/queues/api/queues`, {
      headers: { Authorization: `Basic ${Buffer.from('ops:guess').toString('base64')}`, 'X-Request-Id': `guess-${level}` },
    });
    expect(guess.status).toBe(401);
    const admin = `Basic ${Buffer.from('ops:correct horse battery').toString('base64')}`;
    const action = await fetch(`${server.baseUrl}/admin/queues/api/queues/nope/retry/failed`, { method: 'PUT', headers: { Authorization: admin, 'X-Request-Id': `action-${level}` } });
    expect(action.status).toBe(404);
    for (const [id, method, url, statusCode] of [
      [`bad-json-${level}`, 'POST', '/v1/folders', 400],
      [`guess-${level}`, 'GET', '/admin/queues/api/queues', 401],
      [`action-${level}`, 'PUT', '/admin/queues/api/queues/nope/retry/failed', 404],
    ] as const) {
      await eventually(async () => linesAbout(server, id).length > 0, 5_000, `the log line of ${id}`);
      expect(linesAbout(server, id)).toEqual([expect.objectContaining({ level: 40, msg: 'request completed', req: { id, method, url }, res: expect.objectContaining({ statusCode }) })]);
      expect(JSON.stringify(linesAbout(server, id))).not.toMatch(/b3BzO|correct horse|ops:guess/);
    }
  });

  it(logsSuccess ? 'sees a successful request logged at info' : 'does not see successful requests, and still gets their request id', async () => {
    const res = await fetch(`${server.baseUrl}/v1/files?per_page=1`, { headers: { ...owner.auth, 'X-Request-Id': `listed-${level}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(`listed-${level}`);
    // A generated id when the caller sends none.
    const anonymous = await fetch(`${server.baseUrl}/v1/files?per_page=1`, { headers: owner.auth });
    expect(anonymous.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    if (logsSuccess) {
      await eventually(async () => linesAbout(server, `listed-${level}`).length > 0, 5_000, 'the log line');
      expect(linesAbout(server, `listed-${level}`)).toEqual([expect.objectContaining({ level: 30, msg: 'request completed', res: expect.objectContaining({ statusCode: 200 }) })]);
    } else {
      // A request that is always logged, sent after it: once its line is out, a line for the listing would be too
      // (one process writes its log in order).
      await fetch(`${server.baseUrl}/v1/files/file_nope`, { headers: { ...owner.auth, 'X-Request-Id': `marker-${level}` } });
      await eventually(async () => linesAbout(server, `marker-${level}`).length > 0, 5_000, 'the marker line');
      expect(linesAbout(server, `listed-${level}`)).toEqual([]);
    }
  });
});
