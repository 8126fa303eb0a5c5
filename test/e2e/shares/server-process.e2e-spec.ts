import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../../support/accounts.js';
import { runNode, type ServerProcess, startServerProcess } from '../../support/processes.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { uploadOk } from '../../support/uploads.js';

/**
 * Share links as the built server answers them: it listens on every address, IPv6 included, so an IPv4 visitor
 * reaches it IPv4-mapped (::ffff:a.b.c.d), unlike the test application bound to 127.0.0.1.
 */
describe('share links on the server process', () => {
  let environment: TestEnvironment;
  let server: ServerProcess;
  let auth: Record<string, string>;

  beforeAll(async () => {
    environment = await createTestEnvironment();
    server = await startServerProcess(environment.env);
    const created = await runNode('cli.js', ['accounts', 'create', '--name', 'Sharer', '--plan', 'pro'], environment.env);
    auth = bearer(JSON.parse(created.stdout).api_key as string);
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await environment?.dispose();
  });

  const createShare = async (body: Record<string, unknown>) => {
    const res = await fetch(`${server.baseUrl}/v1/shares`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(201);
    return ((await res.json()) as { data: { id: string; url: string } }).data;
  };

  it('record an IPv4 visitor in share.accessed as the plain IPv4 address, not IPv4-mapped IPv6', async () => {
    const file = await uploadOk(server as never, auth, 'shared over IPv4', { name: 'ipv4.txt' });
    const share = await createShare({ file_id: file.id });
    const opened = await fetch(share.url.replace(/^https?:\/\/[^/]+/, server.baseUrl), { headers: { Accept: 'application/json' } });
    expect(opened.status).toBe(200);
    const feed = await fetch(`${server.baseUrl}/v1/events?types=share.accessed&wait=10`, { headers: auth });
    const events = ((await feed.json()) as { data: Array<{ data: { access: { ip_address: string } } }> }).data;
    expect(events.map((event) => event.data.access.ip_address)).toEqual(['127.0.0.1']);
  });

  it('answer a refused link in JSON with Cache-Control: no-store, as a granted one', async () => {
    const file = await uploadOk(server as never, auth, 'locked', { name: 'locked.txt' });
    const share = await createShare({ file_id: file.id, password: 'correct horse' });
    const url = share.url.replace(/^https?:\/\/[^/]+/, server.baseUrl);
    for (const [target, status] of [[url, 401], [`${server.baseUrl}/s/no-such-token`, 404]] as const) {
      const res = await fetch(target, { headers: { Accept: 'application/json' } });
      expect(res.status).toBe(status);
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
  });
});
