import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNode, startServerProcess, type ServerProcess } from '../../support/processes.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';

const MiB = 1024 * 1024;

/**
 * A PATCH sent with Upload-Checksum is set aside under the server's temp dir until its digest is known. A server
 * killed meanwhile (SIGKILL, the OOM killer) cannot remove it; the next start must, or every crash leaves a chunk behind.
 */
describe('checksummed chunks set aside by a server that died mid-PATCH', () => {
  let environment: TestEnvironment;
  let serverTmp: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    environment = await createTestEnvironment();
    serverTmp = mkdtempSync(join(tmpdir(), 'fss-spool-'));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    rmSync(serverTmp, { recursive: true, force: true });
    await environment?.dispose();
  });

  it('are removed when the server starts again', async () => {
    const env = { ...environment.env, TMPDIR: serverTmp, CLAMAV_SOCKET: join(serverTmp, 'no-clamd.sock') };
    const first = await startServerProcess(env, undefined, 60_000);
    servers.push(first);
    const created = await runNode('cli.js', ['accounts', 'create', '--name', 'Crash', '--plan', 'enterprise'], env);
    expect(created.code, created.stderr).toBe(0);
    const { api_key: key } = JSON.parse(created.stdout) as { api_key: string };
    const upload = await fetch(`${first.baseUrl}/v1/uploads`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Tus-Resumable': '1.0.0', 'Upload-Length': String(MiB), 'Upload-Metadata': `filename ${Buffer.from('c.bin').toString('base64')}` },
    });
    expect(upload.status).toBe(201);

    // Half a checksummed chunk, the connection held open: the server is surely setting it aside when it is killed.
    const target = new URL(upload.headers.get('location')!, first.baseUrl);
    const socket = connect(Number(target.port), target.hostname);
    socket.on('error', () => undefined);
    socket.write(
      `PATCH ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${key}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\n` +
        `Content-Type: application/offset+octet-stream\r\nUpload-Checksum: md5 ${Buffer.alloc(16).toString('base64')}\r\nContent-Length: ${MiB}\r\n\r\n`,
    );
    socket.write(Buffer.alloc(MiB / 2, 1));
    const spools = () => readdirSync(serverTmp).filter((name) => name.startsWith('fss-tus-chunk-'));
    await eventually(async () => spools().some((dir) => existsSync(join(serverTmp, dir, 'chunk')) && statSync(join(serverTmp, dir, 'chunk')).size > 0), 30_000, 'the chunk to be set aside');
    await first.stop('SIGKILL');
    socket.destroy();
    const orphans = spools();
    expect(orphans).toHaveLength(1);

    servers.push(await startServerProcess(env, undefined, 60_000));
    await eventually(async () => !existsSync(join(serverTmp, orphans[0])), 10_000, "the dead server's chunk to be removed");
  }, 180_000);
});
