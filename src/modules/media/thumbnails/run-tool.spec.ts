import { describe, expect, it } from 'vitest';
import { runTool, ToolFailedError, ToolMissingError } from './run-tool.js';

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

  it('reports a missing tool as missing', async () => {
    await expect(runTool('/nonexistent/tool', [], limits)).rejects.toBeInstanceOf(ToolMissingError);
  });

  it('reports a failing tool with the end of its stderr', async () => {
    await expect(runTool('sh', ['-c', 'echo broken input >&2; exit 3'], limits)).rejects.toThrow(/exit 3.*broken input/);
  });
});
