#!/usr/bin/env node
// node bench/cpu-per-request.mjs [--route list|upload|download] [--db sqlite|postgres] [--files N] [--seconds S]
//                                [--connections C] [--query Q] [--size BYTES] [--cpu-prof DIR] [--gc]
// CPU time the server process spends per request: its user+system time (from /proc/<pid>/stat) across a
// load run, divided by the requests answered. Routes:
//   list      GET /v1/files?<query> in an account of --files rows (autocannon);
//   upload    POST /v1/files/upload of --size-byte files from --connections clients; the CPU includes what
//             the uploads leave to the background of the same process (outbox relay, media scan), read once
//             the server has gone idle again, and the database statements per upload (/metrics) are reported;
//   download  GET of a --size-byte file's signed download_url (autocannon).
// With --cpu-prof the server writes a V8 CPU profile to DIR when it stops. With --gc it also counts the server's
// garbage collections during the measured run (minor ones per 100 requests measure the garbage a request leaves
// with the 1 MiB semi-space of START_PROD_FLAGS). Linux only (/proc).
// Run it from a checkout's root against that checkout's dist/.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { createEnvironment, START_PROD_FLAGS } from './lib/environment.mjs';
import { openDatabase } from './lib/database.mjs';
import { load } from './lib/load.mjs';
import { killAllChildren } from './lib/processes.mjs';
import { insertFiles } from './lib/rows.mjs';
import { cpuMs } from './lib/measure.mjs';
import { databaseCounters, multipartBody, runUploads } from './lib/upload-load.mjs';

const { values: args } = parseArgs({
  options: {
    route: { type: 'string', default: 'list' },
    db: { type: 'string', default: 'sqlite' },
    files: { type: 'string', default: '100000' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    query: { type: 'string', default: 'per_page=100&sort=name_asc' },
    size: { type: 'string', default: '1024' },
    'cpu-prof': { type: 'string' },
    gc: { type: 'boolean', default: false },
  },
});

/** CPU the server spends while nothing is asked of it (timers, polls), over `ms`. */
async function idleCpuMs(pid, ms) {
  const before = cpuMs(pid);
  await sleep(ms);
  return cpuMs(pid) - before;
}

const environment = await createEnvironment(args.db, 'cpu');
try {
  const account = await environment.createAccount('cpu per request');
  if (args.route === 'list') {
    const db = await openDatabase(environment.databaseUrl);
    try {
      await insertFiles(db, account, Number(args.files));
    } finally {
      await db.close();
    }
  }
  const nodeFlags = args['cpu-prof'] ? [...START_PROD_FLAGS, '--cpu-prof', `--cpu-prof-dir=${args['cpu-prof']}`] : START_PROD_FLAGS;
  const gcCountFile = `${environment.workDir}/gc-count.json`;
  const server = args.gc
    ? await environment.startServer({ GC_COUNT_FILE: gcCountFile }, { nodeFlags: [...nodeFlags, '--require', new URL('./lib/gc-count.cjs', import.meta.url).pathname] })
    : await environment.startServer({}, { nodeFlags });
  // SIGUSR2 makes gc-count.cjs start counting, the second one write the counts.
  const startCountingGc = () => args.gc && process.kill(server.pid, 'SIGUSR2');
  const gcCounts = async (requests) => {
    if (!args.gc) return {};
    process.kill(server.pid, 'SIGUSR2');
    // The server writes the counts when it gets to it: on a busy machine that can take more than a second.
    for (let waited = 0; !existsSync(gcCountFile) && waited < 15_000; waited += 100) await sleep(100);
    await sleep(100);
    const counts = JSON.parse(readFileSync(gcCountFile, 'utf8'));
    rmSync(gcCountFile);
    return { minorGcPer100Requests: Number(((100 * counts.minor) / requests).toFixed(2)), majorGcs: counts.major, gcMsPerRequest: Number((counts.ms / requests).toFixed(3)) };
  };
  const seconds = Number(args.seconds);
  const connections = Number(args.connections);
  const size = Number(args.size);
  let figures;
  if (args.route === 'upload') {
    const content = randomBytes(size);
    const uploads = (warmUp) => ({
      headers: account.auth,
      concurrency: connections,
      seconds: warmUp ? 3 : seconds,
      makeRequest: (i) => multipartBody(content, `cpu-${warmUp ? 'w' : 'm'}-${i}.bin`),
      check: (body) => body?.data?.size === size,
    });
    await runUploads(`${server.url}/v1/files/upload`, uploads(true)); // warm-up: JIT, caches
    await sleep(2000); // the warm-up's background work (relay, scans) is done
    const idle = await idleCpuMs(server.pid, 1000);
    const countersBefore = await databaseCounters(server.url);
    startCountingGc();
    const before = cpuMs(server.pid);
    const started = performance.now();
    const result = await runUploads(`${server.url}/v1/files/upload`, uploads(false));
    if (result.failures.length) throw new Error(`${result.failures.length} uploads failed: ${result.failures[0]}`);
    await sleep(2000); // their background work too
    const spent = cpuMs(server.pid) - before - (idle * (performance.now() - started)) / 1000;
    const counters = await databaseCounters(server.url);
    figures = {
      uploads: result.uploads,
      uploadsPerSecond: Math.round(result.perSecond),
      p50: Math.round(result.p50),
      p99: Math.round(result.p99),
      cpuMsPerUpload: Number((spent / result.uploads).toFixed(3)),
      statementsPerUpload: Number(((counters.statements - countersBefore.statements) / result.uploads).toFixed(2)),
      transactionsPerUpload: Number(((counters.transactions - countersBefore.transactions) / result.uploads).toFixed(2)),
      ...(await gcCounts(result.uploads)),
    };
  } else {
    let url = `${server.url}/v1/files?${args.query}`;
    let headers = account.auth;
    if (args.route === 'download') {
      const { body, contentType } = multipartBody(randomBytes(size), 'download.bin');
      const answer = await fetch(`${server.url}/v1/files/upload`, { method: 'POST', headers: { ...account.auth, 'content-type': contentType }, body });
      const uploaded = await answer.json();
      if (!answer.ok) throw new Error(`upload answered ${answer.status}: ${JSON.stringify(uploaded)}`);
      url = uploaded.data.download_url.replace(/^https?:\/\/[^/]+/, server.url);
      headers = {};
    }
    const settings = { headers, connections };
    await load(url, { ...settings, duration: 3 }); // warm-up: JIT, caches
    startCountingGc();
    const before = cpuMs(server.pid);
    const result = await load(url, { ...settings, duration: seconds });
    const spent = cpuMs(server.pid) - before;
    const gc = await gcCounts(result.requests);
    if (result.non2xx || result.errors) throw new Error(`${result.non2xx} non-2xx answers, ${result.errors} errors`);
    figures = { requests: result.requests, rps: Math.round(result.requests / result.seconds), p50: result.p50, p99: result.p99, cpuMsPerRequest: Number((spent / result.requests).toFixed(3)), ...gc };
  }
  console.log(JSON.stringify({ route: args.route, db: args.db, ...(args.route === 'list' ? { files: Number(args.files), query: args.query } : { size }), connections, ...figures }));
  await server.stop();
} finally {
  killAllChildren();
  await environment.dispose();
}
