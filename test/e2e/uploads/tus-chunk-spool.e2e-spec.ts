import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../../support/processes.js';
import { patchHeldOpen } from '../../support/tus.js';
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
    // Half a checksummed chunk, the connection held open: the server is surely setting it aside when it is killed.
    const { server: first, env, socket } = await patchHeldOpen(environment.env, serverTmp, {
      length: MiB,
      sent: MiB / 2,
      headers: { 'Upload-Checksum': `md5 ${Buffer.alloc(16).toString('base64')}` },
    });
    servers.push(first);
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
