#!/usr/bin/env node
// node bench/cpu-per-request.mjs [--db sqlite|postgres] [--files N] [--seconds S] [--connections C] [--query Q] [--cpu-prof DIR] [--gc]
// CPU time the server process spends per GET /v1/files request: its user+system time (from /proc/<pid>/stat)
// across an autocannon run, divided by the requests answered. With --cpu-prof the server writes a V8 CPU
// profile to DIR when it stops. With --gc it also counts the server's garbage collections during the run (minor
// ones per 100 requests measure the garbage a request leaves with the 1 MiB semi-space of START_PROD_FLAGS).
// Linux only (/proc). Run it from a checkout's root against that checkout's dist/.
import { readFileSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { createEnvironment, START_PROD_FLAGS } from './lib/environment.mjs';
import { openDatabase } from './lib/database.mjs';
import { load } from './lib/load.mjs';
import { killAllChildren } from './lib/processes.mjs';
import { insertFiles } from './lib/rows.mjs';

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    files: { type: 'string', default: '100000' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    query: { type: 'string', default: 'per_page=100&sort=name_asc' },
    'cpu-prof': { type: 'string' },
    gc: { type: 'boolean', default: false },
  },
});

/** User + system CPU time of a process so far, in ms (clock ticks of 10 ms on Linux). */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const environment = await createEnvironment(args.db, 'cpu');
try {
  const account = await environment.createAccount('cpu per request');
  const db = await openDatabase(environment.databaseUrl);
  try {
    await insertFiles(db, account, Number(args.files));
  } finally {
    await db.close();
  }
  const nodeFlags = args['cpu-prof'] ? [...START_PROD_FLAGS, '--cpu-prof', `--cpu-prof-dir=${args['cpu-prof']}`] : START_PROD_FLAGS;
  const gcCountFile = `${environment.workDir}/gc-count.json`;
  const server = args.gc
    ? await environment.startServer({ GC_COUNT_FILE: gcCountFile }, { nodeFlags: [...nodeFlags, '--require', new URL('./lib/gc-count.cjs', import.meta.url).pathname] })
    : await environment.startServer({}, { nodeFlags });
  const url = `${server.url}/v1/files?${args.query}`;
  const settings = { headers: account.auth, connections: Number(args.connections) };
  await load(url, { ...settings, duration: 3 }); // warm-up: JIT, caches
  if (args.gc) process.kill(server.pid, 'SIGUSR2');
  const before = cpuMs(server.pid);
  const result = await load(url, { ...settings, duration: Number(args.seconds) });
  const spent = cpuMs(server.pid) - before;
  let gc;
  if (args.gc) {
    process.kill(server.pid, 'SIGUSR2');
    await sleep(1000);
    const counts = JSON.parse(readFileSync(gcCountFile, 'utf8'));
    rmSync(gcCountFile);
    gc = { minorGcPer100Requests: Number(((100 * counts.minor) / result.requests).toFixed(2)), majorGcs: counts.major, gcMsPerRequest: Number((counts.ms / result.requests).toFixed(3)) };
  }
  if (result.non2xx || result.errors) throw new Error(`${result.non2xx} non-2xx answers, ${result.errors} errors`);
  console.log(
    JSON.stringify({
      db: args.db,
      files: Number(args.files),
      query: args.query,
      requests: result.requests,
      rps: Math.round(result.requests / result.seconds),
      p50: result.p50,
      p99: result.p99,
      cpuMsPerRequest: Number((spent / result.requests).toFixed(3)),
      ...gc,
    }),
  );
  await server.stop();
} finally {
  killAllChildren();
  await environment.dispose();
}
