#!/usr/bin/env node
// npm run bench [-- --quick] [--db sqlite|postgres] [--only upload,download,listing,webhooks,purge,cli,memory,tus,webhooks-direct,feed,replay]
//                [--runs N] [--connections N] [--files N] [--purge-via job|cli] [--server-env NAME=VALUE ...]
// Benchmarks the built service (dist/) as a real server process against real Redis and the chosen
// database, side by side with baselines; prints one table and writes JSON to bench/results/.
import { execSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { autovacuumOnForTheRun, deadTuples } from './lib/database.mjs';
import { createEnvironment } from './lib/environment.mjs';
import { NotAvailable, waitForIdleServer } from './lib/measure.mjs';
import { DIST, killAllChildren, ROOT } from './lib/processes.mjs';
import { printTable } from './lib/table.mjs';
import { cliScenario } from './scenarios/cli.mjs';
import { downloadScenario } from './scenarios/download.mjs';
import { feedScenario } from './scenarios/feed.mjs';
import { memoryScenario } from './scenarios/memory.mjs';
import { listingScenario } from './scenarios/listing.mjs';
import { purgeScenario } from './scenarios/purge.mjs';
import { replayScenario } from './scenarios/replay.mjs';
import { tusScenario } from './scenarios/tus.mjs';
import { uploadScenario } from './scenarios/upload.mjs';
import { webhooksScenario, webhooksVersusDirectSendScenario } from './scenarios/webhooks.mjs';

const SCENARIOS = {
  upload: { title: '1 upload', run: uploadScenario, needsServer: true },
  download: { title: '2 download', run: downloadScenario, needsServer: true },
  listing: { title: '3 listing', run: listingScenario, needsServer: true },
  webhooks: { title: '4 webhooks', run: webhooksScenario, needsServer: true },
  purge: { title: '5 purge', run: purgeScenario, needsServer: false },
  cli: { title: '6 cli', run: cliScenario, needsServer: false },
  memory: { title: '7 memory', run: memoryScenario, needsServer: false },
  tus: { title: '8 resumable upload (tus)', run: tusScenario, needsServer: true },
  'webhooks-direct': { title: '4b webhooks vs direct send', run: webhooksVersusDirectSendScenario, needsServer: true },
  feed: { title: '9 event feed', run: feedScenario, needsServer: true },
  replay: { title: '10 webhook replay', run: replayScenario, needsServer: true },
};

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    db: { type: 'string', default: 'sqlite' },
    only: { type: 'string' },
    runs: { type: 'string', default: '3' },
    connections: { type: 'string', default: '10' },
    files: { type: 'string', default: '100000' },
    'purge-via': { type: 'string', default: 'job' },
    'server-env': { type: 'string', multiple: true, default: [] },
  },
});
const options = {
  quick: args.quick,
  db: args.db,
  runs: Number(args.runs),
  connections: Number(args.connections),
  // The largest listing account (scenario 3): 1,000 and 100,000 are always measured.
  files: Number(args.files),
  purgeVia: args['purge-via'],
  // Extra variables for the server under test, e.g. --server-env WEBHOOK_DELIVERY_CONCURRENCY=100
  serverEnv: Object.fromEntries(args['server-env'].map((pair) => [pair.split('=')[0], pair.split('=').slice(1).join('=')])),
};
const only = args.only ? args.only.split(',').map((s) => s.trim()) : Object.keys(SCENARIOS);
const problems = [];
if (!['sqlite', 'postgres'].includes(options.db)) problems.push('--db must be sqlite or postgres');
if (!Number.isInteger(options.runs) || options.runs < 1) problems.push('--runs must be a positive integer');
if (!Number.isInteger(options.connections) || options.connections < 1) problems.push('--connections must be a positive integer');
if (!Number.isInteger(options.files) || options.files < 1_000) problems.push('--files must be an integer of at least 1000');
if (!['job', 'cli'].includes(options.purgeVia)) problems.push('--purge-via must be job or cli');
for (const name of only) if (!SCENARIOS[name]) problems.push(`unknown scenario ${name} (known: ${Object.keys(SCENARIOS).join(', ')})`);
if (!existsSync(join(DIST, 'main.js'))) problems.push('dist/main.js is missing: run `npm run build` (npm run bench does)');
if (problems.length) {
  process.stderr.write(`${problems.join('\n')}\n`);
  process.exit(2);
}

const log = (message) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    killAllChildren();
    void (autovacuum?.restore() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}

const suiteStarted = performance.now();
const startedAt = new Date().toISOString();
const results = [];
const raw = {};
let environment = null;
let context = null;
let deploymentProblem = null;
let autovacuum = null;

try {
  if (options.db === 'postgres') {
    autovacuum = await autovacuumOnForTheRun();
    log(`PostgreSQL autovacuum on for the run (was ${autovacuum.before})`);
  }
  for (const name of only) {
    const scenario = SCENARIOS[name];
    const started = performance.now();
    log(`${scenario.title}: running`);
    try {
      if (scenario.needsServer && !context) context = await startMainDeployment();
      // Each scenario measures the server alone: what the previous one left to the background (scans of its
      // uploads, deliveries of its events) finishes first.
      else if (scenario.needsServer) await waitForIdleServer(context.server.pid, { baseUrl: context.server.url, log });
      if (scenario.needsServer && context.server.child.exitCode !== null) throw new Error(`the server exited:\n${context.server.output().slice(-2000)}`);
      const outcome = await scenario.run(context ?? { options, shared: {} });
      for (const row of outcome.rows) results.push({ scenario: scenario.title, ...row });
      raw[name] = { seconds: (performance.now() - started) / 1000, ...outcome.raw };
      saveProgress();
      log(`${scenario.title}: done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    } catch (error) {
      const available = !(error instanceof NotAvailable);
      results.push({ scenario: scenario.title, metric: available ? 'error' : 'not available', note: error.message.split('\n')[0].slice(0, 160) });
      raw[name] = { seconds: (performance.now() - started) / 1000, status: available ? 'error' : 'not available', message: error.message };
      log(`${scenario.title}: ${available ? 'FAILED' : 'not available'}: ${error.message.slice(0, 2000)}`);
      if (available && context?.server) {
        const tail = context.server.output().slice(-1500);
        if (tail.trim()) log(`server output (tail):\n${tail}`);
      }
    }
  }
  if (options.db === 'postgres' && environment) await reportDeadTuples(environment.databaseUrl);
} finally {
  await environment?.dispose();
  await autovacuum?.restore().catch((error) => log(`could not restore autovacuum: ${error.message}`));
}

/** What the main deployment's tables hold in dead row versions after every scenario ran, with autovacuum on. */
async function reportDeadTuples(databaseUrl) {
  try {
    const tables = await deadTuples(databaseUrl);
    raw.deadTuples = tables;
    for (const t of tables.filter((t) => t.dead > 0 || ['accounts', 'file_listing_versions', 'upload_reservations'].includes(t.table))) {
      results.push({ scenario: 'postgres', metric: `dead tuples ${t.table}`, value: t.dead, unit: 'rows', detail: `${t.live} live, ${t.autovacuums} autovacuums` });
    }
  } catch (error) {
    log(`could not read pg_stat_user_tables: ${error.message}`);
  }
}

const meta = buildMeta();
printTable(results, meta);
const file = saveProgress();
process.stdout.write(`\nJSON: ${file}\n`);
process.exit(0);

function buildMeta() {
  return {
  date: startedAt,
  db: options.db,
  quick: options.quick,
  runs: options.runs,
  connections: options.connections,
  files: options.files,
  purgeVia: options.purgeVia,
  serverEnv: options.serverEnv,
  scenarios: only,
  seconds: (performance.now() - suiteStarted) / 1000,
  node: process.version,
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model,
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  loadAverage: loadavg(),
  commit: gitCommit(),
  };
}

/** The JSON is rewritten after every scenario, so an interrupted run still leaves what it measured. */
function saveProgress() {
  const dir = resolve(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `bench-${options.db}${options.quick ? '-quick' : ''}-${startedAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({ meta: buildMeta(), results, raw }, null, 2)}\n`);
  return file;
}

async function startMainDeployment() {
  if (deploymentProblem) throw deploymentProblem;
  // A cron that never fires during the run: scenario 5 measures the purge in its own deployment.
  environment = await createEnvironment(options.db, 'main', { TRASH_PURGE_CRON: '0 0 1 1 *', ...options.serverEnv });
  try {
    const server = await environment.startServer();
    const account = await environment.createAccount('bench');
    log(`server pid ${server.pid} on ${server.url} (${options.db})`);
    return { environment, server, account, options, shared: {}, log };
  } catch (error) {
    deploymentProblem = error;
    await environment.dispose();
    environment = null;
    throw error;
  }
}

function gitCommit() {
  try {
    return execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim();
  } catch {
    return null;
  }
}
