import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { sleep } from './measure.mjs';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const DIST = resolve(ROOT, 'dist');
const children = new Set();

/** A free TCP port on the loopback interface. */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
    server.on('error', reject);
  });
}

/**
 * Starts a node script as a child process with exactly the given environment (plus PATH) and waits
 * until its output contains `readyText`. The child's pid is the node process itself, so its
 * /proc/<pid>/status is the memory of the server being measured.
 */
export async function startNode(script, args, env, { readyText, timeoutMs = 60_000, name = script, nodeFlags = [] } = {}) {
  const child = spawn(process.execPath, [...nodeFlags, script, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  const keep = (chunk) => {
    output += chunk;
    if (output.length > 200_000) output = output.slice(-100_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((done) =>
    child.on('exit', (code, signal) => {
      children.delete(child);
      done({ code, signal });
    }),
  );
  const deadline = Date.now() + timeoutMs;
  while (!output.includes(readyText)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited before it was ready:\n${output.slice(-4000)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} was not ready within ${timeoutMs} ms:\n${output.slice(-4000)}`);
    }
    await sleep(25);
  }
  return {
    pid: child.pid,
    child,
    output: () => output,
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs a node script to completion; resolves with its exit code and output. */
export function runNode(script, args, env, { timeoutMs = 120_000 } = {}) {
  return new Promise((resolvePromise, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [script, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} ${args.join(' ')} did not finish within ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolvePromise({ code, stdout, stderr, ms: performance.now() - started, pid: child.pid });
    });
  });
}

/** Last resort on an abort: no child of this run outlives it. */
export function killAllChildren() {
  for (const child of children) child.kill('SIGKILL');
}
