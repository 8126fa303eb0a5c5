import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTool, ToolFailedError, ToolMissingError } from './run-tool.js';

const workDir = mkdtempSync(join(tmpdir(), 'fss-run-tool-'));
const pidFile = join(workDir, 'tool.pid');
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const limits = { timeoutMs: 5_000, memoryMb: 512, maxOutputBytes: 1024 };

describe('runTool', () => {
  it('returns what the tool wrote', async () => {
    expect((await runTool('printf', ['hello'], limits)).toString()).toBe('hello');
  });

  it('kills a tool that runs past its deadline, promptly', async () => {
    const started = Date.now();
    await expect(runTool('sleep', ['30'], { ...limits, timeoutMs: 300 })).rejects.toMatchObject({ timedOut: true });
    // Well before the tool's own 30 s, however loaded the machine.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('kills a tool that writes more than allowed', async () => {
    await expect(runTool('yes', [], limits)).rejects.toThrow(/more than 1024 bytes/);
  });

  it('holds a tool to its memory limit', async () => {
    // The limit the tool runs under, as it sees it (KiB)...
    expect((await runTool('sh', ['-c', 'ulimit -v'], { ...limits, memoryMb: 64 })).toString().trim()).toBe('65536');
    // ...and what it does: `head -c` through a huge buffer is refused by the address-space limit (a failure, not the deadline).
    const refused = runTool('sh', ['-c', 'x=$(head -c 300000000 /dev/zero | tr "\\0" a); echo ${#x}'], { ...limits, timeoutMs: 30_000, memoryMb: 64, maxOutputBytes: 1e9 });
    await expect(refused).rejects.toBeInstanceOf(ToolFailedError);
    await expect(refused).rejects.toMatchObject({ timedOut: false });
  });

  it('leaves no busy tool behind when the process that ran it is killed', async () => {
    expect((await runTool('sh', ['-c', 'ulimit -t'], { ...limits, timeoutMs: 30_000 })).toString().trim()).toBe('120');
    // A process running a tool that spins forever, SIGKILLed before its deadline: its timer dies with it.
    const script = `import { runTool } from ${JSON.stringify(join(process.cwd(), 'dist/modules/media/thumbnails/run-tool.js'))};
      runTool('sh', ['-c', 'echo $$ > ${pidFile}; while :; do :; done'], { timeoutMs: 1000, memoryMb: 512, maxOutputBytes: 1024 }).catch(() => {});
      setInterval(() => {}, 1000);`;
    const owner = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
    await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 10_000);
    const toolPid = Number(readFileSync(pidFile, 'utf8'));
    owner.kill('SIGKILL');
    // Its CPU-time limit (4 s for a 1 s deadline) stops it, however the machine is loaded, well before 30 s.
    try {
      await until(() => !isAlive(toolPid), 30_000);
    } finally {
      if (isAlive(toolPid)) process.kill(toolPid, 'SIGKILL');
    }
  }, 45_000);

  it('reports a missing tool as missing', async () => {
    await expect(runTool('/nonexistent/tool', [], limits)).rejects.toBeInstanceOf(ToolMissingError);
  });

  it('reports a failing tool with the end of its stderr', async () => {
    await expect(runTool('sh', ['-c', 'echo broken input >&2; exit 3'], limits)).rejects.toThrow(/exit 3.*broken input/);
  });
});
