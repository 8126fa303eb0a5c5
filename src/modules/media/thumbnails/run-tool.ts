import { spawn } from 'node:child_process';

export interface ToolLimits {
  timeoutMs: number;
  /** Address-space limit for the child (ulimit -v), so a hostile file cannot make it eat the machine's memory. */
  memoryMb: number;
  /** Output beyond this many bytes kills the child. */
  maxOutputBytes: number;
}

/** The CPU time (s) a tool may use: outlives the deadline only if the tool's owner is gone. */
export function toolCpuSeconds(timeoutMs: number): number {
  return Math.ceil(timeoutMs / 1000) * 4;
}

export class ToolMissingError extends Error {
  constructor(readonly tool: string) {
    super(`${tool} is not installed (or not executable); install it to get these thumbnails`);
    this.name = 'ToolMissingError';
  }
}

export class ToolFailedError extends Error {
  constructor(
    message: string,
    readonly timedOut = false,
  ) {
    super(message);
    this.name = 'ToolFailedError';
  }
}

/**
 * Runs an external tool (ffmpeg, pdftoppm) with bounded time, memory and output: the child gets an
 * address-space limit and its own process group, and the whole group is killed with SIGKILL at the deadline.
 * Resolves with stdout; rejects with ToolMissingError or ToolFailedError (message includes stderr's tail).
 */
export function runTool(command: string, args: string[], limits: ToolLimits): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // `exec` keeps the pid, so killing the group kills the tool itself; "$0" is the command, "$@" its arguments.
    // The limits are best effort: a sandbox that refuses ulimit still gets thumbnails, bounded by the deadline.
    // The deadline is our timer, which dies with this process; the CPU-time limit is the kernel's, so a tool
    // left behind by a killed server stops too. Generous (4 busy threads for the whole deadline): only a backstop.
    const cpuSeconds = toolCpuSeconds(limits.timeoutMs);
    const child = spawn('/bin/sh', ['-c', `ulimit -v ${limits.memoryMb * 1024} 2>/dev/null; ulimit -t ${cpuSeconds} 2>/dev/null; exec "$0" "$@"`, command, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      // Fewer malloc arenas keep threaded decoders well inside the address-space limit.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', MALLOC_ARENA_MAX: '2', LC_ALL: 'C' },
    });
    const stdout: Buffer[] = [];
    let stdoutLength = 0;
    let stderr = '';
    let failure: ToolFailedError | undefined;
    const kill = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      failure = new ToolFailedError(`${command} did not finish within ${limits.timeoutMs} ms and was killed`, true);
      kill();
    }, limits.timeoutMs);
    child.stdout.on('data', (data: Buffer) => {
      stdoutLength += data.length;
      if (stdoutLength > limits.maxOutputBytes) {
        failure ??= new ToolFailedError(`${command} produced more than ${limits.maxOutputBytes} bytes and was killed`);
        kill();
        return;
      }
      stdout.push(data);
    });
    child.stderr.on('data', (data: Buffer) => {
      stderr = (stderr + data.toString('utf8')).slice(-2000);
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new ToolFailedError(`${command} could not be started: ${error.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (failure) return reject(failure);
      // sh answers 127 when exec cannot find the command, 126 when it cannot run it.
      if (code === 127 || code === 126) return reject(new ToolMissingError(command));
      if (code !== 0) {
        const detail = stderr.trim().split('\n').slice(-3).join(' | ');
        return reject(new ToolFailedError(`${command} failed (${signal ?? `exit ${code}`})${detail ? `: ${detail}` : ''}`));
      }
      resolve(Buffer.concat(stdout));
    });
  });
}
