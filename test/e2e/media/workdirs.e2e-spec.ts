import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mp4Video } from '../../support/media.js';
import { runNode, startServerProcess, type ServerProcess } from '../../support/processes.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';

/**
 * A thumbnail job copies the file into a work dir under the server's temp dir. A server killed mid-job (SIGKILL,
 * the OOM killer) cannot remove it; the next start must, or every crash leaves a whole copy of a file behind.
 */
describe('thumbnail work dirs of a server that died mid-job', () => {
  let environment: TestEnvironment;
  let serverTmp: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    environment = await createTestEnvironment();
    serverTmp = mkdtempSync(join(tmpdir(), 'fss-workdirs-'));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    rmSync(serverTmp, { recursive: true, force: true });
    await environment?.dispose();
  });

  it('are removed when the server starts again', async () => {
    // An "ffmpeg" that hangs, so the server is surely mid-job when it is killed.
    const hangingFfmpeg = join(serverTmp, 'hanging-ffmpeg');
    // (It answers the start-up check, `ffmpeg -version`, at once.)
    writeFileSync(hangingFfmpeg, `#!/bin/sh\n[ "$1" = -version ] && exec echo 'ffmpeg version test'\necho $$ > ${join(serverTmp, 'ffmpeg.pid')}\nexec sleep 60\n`);
    chmodSync(hangingFfmpeg, 0o755);
    // No clamd (none at Debian's socket either, whatever else runs), and every file above its 1-byte limit: judged
    // "skipped" at once, so the thumbnail, which waits for the verdict, is queued right after the upload.
    const env = { ...environment.env, TMPDIR: serverTmp, FFMPEG_PATH: hangingFfmpeg, CLAMAV_SOCKET: join(serverTmp, 'no-clamd.sock'), CLAMAV_MAX_STREAM_BYTES: '1' };
    const first = await startServerProcess(env, undefined, 60_000);
    servers.push(first);

    const created = await runNode('cli.js', ['accounts', 'create', '--name', 'Crash', '--plan', 'enterprise'], env);
    expect(created.code, created.stderr).toBe(0);
    const { api_key: key } = JSON.parse(created.stdout) as { api_key: string };
    const form = new FormData();
    form.append('file', new Blob([mp4Video(1)], { type: 'video/mp4' }), 'clip.mp4');
    const upload = await fetch(`${first.baseUrl}/v1/files/upload`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
    expect(upload.status).toBe(200);

    const pidFile = join(serverTmp, 'ffmpeg.pid');
    await eventually(async () => existsSync(pidFile), 30_000, 'the thumbnail job to reach ffmpeg');
    await first.stop('SIGKILL');
    process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
    const workdirs = () => readdirSync(serverTmp).filter((name) => name.startsWith('fss-thumb-'));
    const orphans = workdirs();
    expect(orphans).toHaveLength(1);
    expect(readdirSync(join(serverTmp, orphans[0]))).toEqual(['source']);

    servers.push(await startServerProcess(env, undefined, 60_000));
    await eventually(async () => !existsSync(join(serverTmp, orphans[0])), 10_000, 'the dead server\'s work dir to be removed');
  }, 180_000);
});
