import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
// Every answer a test receives is checked against openapi.json (see contract.ts).
import './contract.js';
import { resolve } from 'node:path';

export const DIST = resolve(process.cwd(), 'dist');

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a built entry point (dist/cli.js, dist/main.js) with the given environment and waits for it to exit. */
export function runNode(script: string, args: string[], env: Record<string, string>, timeoutMs = 30_000): Promise<ProcessResult> {
  return runToExit(process.execPath, [resolve(DIST, script), ...args], env, timeoutMs, `${script} ${args.join(' ')}`);
}

/** Runs `command` with only PATH and `env` in its environment, and answers its exit code and output once it exits. */
export function runToExit(command: string, args: string[], env: Record<string, string>, timeoutMs = 30_000, what = command): Promise<ProcessResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not exit within ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

export interface ServerProcess {
  baseUrl: string;
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code and signal once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` and waits for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts the built server (dist/main.js) as its own process, on `port` or a free one, and waits
 * until /health answers.
 */
export async function startServerProcess(env: Record<string, string>, port?: number, timeoutMs = 30_000): Promise<ServerProcess> {
  const listenPort = port ?? (await freePort());
  const child = spawn(process.execPath, [resolve(DIST, 'main.js')], {
    env: { PATH: process.env.PATH ?? '', ...env, PORT: String(listenPort), PUBLIC_BASE_URL: `http://127.0.0.1:${listenPort}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  const baseUrl = `http://127.0.0.1:${listenPort}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`dist/main.js exited with ${child.exitCode}:\n${output}`);
    const healthy = await fetch(`${baseUrl}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (healthy) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`dist/main.js did not become healthy within ${timeoutMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    baseUrl,
    child,
    output: () => output,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}
