import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../../support/processes.js';
import { startS3, type TestS3 } from '../../support/s3.js';
import { createAccount } from '../../support/accounts.js';
import { createTestEnvironment, startTestApp, type TestEnvironment } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { patchHeldOpen, tusUpload, tusUploadUntil } from '../../support/tus.js';

const MiB = 1024 * 1024;

/** Every file under `dir`, however deep, by its path relative to it. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(dir, join(prefix, entry.name)) : [join(prefix, entry.name)],
  );
}

/**
 * On S3 a PATCH's bytes are staged part by part in files under the server's temp dir before each goes to the bucket. A
 * server killed meanwhile (SIGKILL, the OOM killer) cannot remove them; the next start must, or every crash leaves up to
 * a few parts of 8 MiB behind for good.
 */
describe('parts of a resumable upload staged for S3 by a server that died mid-PATCH (built server)', () => {
  let s3: TestS3;
  let environment: TestEnvironment;
  let serverTmp: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    s3 = await startS3();
    environment = await createTestEnvironment(s3.env());
    serverTmp = mkdtempSync(join(tmpdir(), 'fss-s3-staging-'));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    rmSync(serverTmp, { recursive: true, force: true });
    await environment?.dispose();
    await s3?.close();
  });

  it('are removed when the server starts again', async () => {
    // 12 of a PATCH's 20 MiB, the connection held open: one 8 MiB part is staged and a second is being staged when the server is killed.
    const { server: first, env, socket } = await patchHeldOpen(environment.env, serverTmp, { length: 20 * MiB, sent: 12 * MiB });
    servers.push(first);
    const staged = await eventually(async () => {
      const files = filesUnder(serverTmp);
      return files.length > 0 ? files : null;
    }, 30_000, 'the PATCH to stage a part');
    await first.stop('SIGKILL');
    socket.destroy();
    expect(staged.every((file) => existsSync(join(serverTmp, file)))).toBe(true);

    servers.push(await startServerProcess(env, undefined, 60_000));
    await eventually(async () => staged.every((file) => !existsSync(join(serverTmp, file))), 10_000, "the dead server's staged parts to be removed");
  }, 180_000);
});

describe('the dir a server stages parts for S3 in', () => {
  it('is made again when a temp cleaner (systemd-tmpfiles, tmpreaper) removed it while the server ran', async () => {
    const s3 = await startS3();
    const t = await startTestApp(s3.env());
    try {
      const account = await createAccount(t.app);
      const content = randomBytes(10 * MiB);
      // This process may hold the dirs of other test apps from earlier test files (the test workers are reused): the
      // app's own is the one its first PATCH made.
      const stagingDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith(`fss-tus-s3-parts-${process.pid}-`));
      const before = new Set(stagingDirs());
      const url = await tusUploadUntil(t.baseUrl, account.auth, content, 9 * MiB, { chunkSize: 9 * MiB });
      const ours = stagingDirs().filter((name) => !before.has(name));
      expect(ours).toHaveLength(1);
      rmSync(join(tmpdir(), ours[0]), { recursive: true, force: true });
      const { fileId } = await tusUpload(t.baseUrl, account.auth, content, { uploadUrl: url, chunkSize: 9 * MiB, retryDelays: null });
      expect(fileId).toBeTruthy();
    } finally {
      await t.close();
      await s3.close();
    }
  }, 60_000);
});
