import { resolve } from 'node:path';
import { openDatabase } from '../lib/database.mjs';
import { expectOk, requestJson } from '../lib/http.mjs';
import { load } from '../lib/load.mjs';
import { median } from '../lib/measure.mjs';
import { ROOT, startNode } from '../lib/processes.mjs';
import { insertFiles } from '../lib/rows.mjs';

export const LISTING_VARIANTS = {
  name_asc: 'per_page=100&sort=name_asc',
  created_desc: 'per_page=100&sort=created_desc',
  search: 'per_page=100&search=report',
};

/**
 * Scenario 3: GET /v1/files?per_page=100 under autocannon, for an account with 1,000 files and one with
 * 100,000 (rows inserted directly), sorted by name, by newest, and with a search; side by side with a
 * bare NestJS route (the framework ceiling). Targets rotate from run to run.
 */
export async function listingScenario(ctx) {
  const { environment, server, options } = ctx;
  const sizes = { '1k': 1_000, '100k': 100_000 };
  const accounts = {};
  const db = await openDatabase(environment.databaseUrl);
  const insertStarted = performance.now();
  try {
    for (const [label, n] of Object.entries(sizes)) {
      accounts[label] = await environment.createAccount(`bench listing ${label}`);
      await insertFiles(db, accounts[label], n);
    }
  } finally {
    await db.close();
  }
  const insertMs = performance.now() - insertStarted;

  // The route exists and sees the rows.
  for (const [label, n] of Object.entries(sizes)) {
    const body = expectOk(await requestJson('GET', `${server.url}/v1/files?per_page=100`, { headers: accounts[label].auth }), 'GET /v1/files');
    if (body.pagination?.total_items !== n || body.data?.length !== 100) {
      throw new Error(`GET /v1/files for ${label} answered total_items ${body.pagination?.total_items} with ${body.data?.length} items`);
    }
  }

  const bare = await startNode(resolve(ROOT, 'bench/baselines/nest-bare.mjs'), [], { NODE_ENV: 'production' }, { readyText: 'LISTENING' });
  const bareUrl = `http://127.0.0.1:${/LISTENING (\d+)/.exec(bare.output())[1]}/v1/ping`;
  const targets = { bare: { url: bareUrl, headers: {} } };
  for (const size of Object.keys(sizes)) {
    for (const [variant, query] of Object.entries(LISTING_VARIANTS)) {
      targets[`${size} ${variant}`] = { url: `${server.url}/v1/files?${query}`, headers: accounts[size].auth };
    }
  }
  const runs = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
  const settings = { connections: options.connections, duration: options.quick ? 1 : 5 };
  try {
    for (const target of Object.values(targets)) await load(target.url, { ...settings, headers: target.headers, duration: 1 }); // warm-up
    const names = Object.keys(targets);
    for (let run = 0; run < options.runs; run++) {
      for (let i = 0; i < names.length; i++) {
        const name = names[(i + run) % names.length];
        const result = await load(targets[name].url, { ...settings, headers: targets[name].headers });
        if (result.non2xx || result.errors) throw new Error(`${name}: ${result.non2xx} non-2xx answers and ${result.errors} errors under load`);
        // autocannon stops sending at the end of the run, but the server still works through the
        // requests in flight; wait them out so they do not slow down the next target.
        await drain(targets[name]);
        // Unloaded latency: a few requests one after the other (no queueing in the server).
        const single = [];
        for (let k = 0; k < 5; k++) single.push(await timed(targets[name]));
        // A run in which (almost) nothing completed has no latency to speak of.
        const enough = result.requests >= 5;
        runs[name].push({ ...result, p50: enough ? result.p50 : NaN, p99: enough ? result.p99 : NaN, rps: result.requests / result.seconds, unloadedP50: median(single) });
      }
    }
  } finally {
    await bare.stop();
  }

  const m = (name, key) => median(runs[name].map((r) => r[key]));
  const ms = (v) => (Number.isFinite(v) ? `${v} ms` : 'n/a');
  const latency = (name) => `p50 ${ms(m(name, 'p50'))}, p99 ${ms(m(name, 'p99'))}; alone ${m(name, 'unloadedP50').toFixed(1)} ms`;
  const rows = [{ metric: 'bare NestJS route', value: m('bare', 'rps'), unit: 'req/s', detail: latency('bare') }];
  for (const size of Object.keys(sizes)) {
    for (const variant of Object.keys(LISTING_VARIANTS)) {
      const name = `${size} ${variant}`;
      rows.push({ metric: `list ${size === '1k' ? '1,000' : '100,000'} files, ${variant}`, value: m(name, 'rps'), unit: 'req/s', baseline: 'bare NestJS', baselineValue: m('bare', 'rps'), detail: latency(name) });
    }
  }
  for (const variant of Object.keys(LISTING_VARIANTS)) {
    const p99 = m(`100k ${variant}`, 'p99');
    rows.push({ metric: `p99 at 100,000 files, ${variant}`, value: p99, unit: 'ms', detail: Number.isFinite(p99) ? undefined : 'fewer than 5 answers per run', target: '< 25 ms', pass: p99 < 25 });
  }
  for (const variant of Object.keys(LISTING_VARIANTS)) {
    const big = m(`100k ${variant}`, 'p50');
    const small = m(`1k ${variant}`, 'p50');
    const alone = `alone: ${m(`100k ${variant}`, 'unloadedP50').toFixed(1)} vs ${m(`1k ${variant}`, 'unloadedP50').toFixed(1)} ms`;
    rows.push({ metric: `p50 100,000 vs 1,000, ${variant}`, value: big, unit: 'ms', detail: alone, baseline: 'p50 at 1,000', baselineValue: small, target: '<= 1.5x', pass: big / small <= 1.5 });
  }
  return { rows, raw: { settings, insertMs, runs } };
}

async function timed(target) {
  const started = performance.now();
  const res = await requestJson('GET', target.url, { headers: target.headers });
  if (res.status !== 200) throw new Error(`${target.url} answered ${res.status}`);
  return performance.now() - started;
}

function drain(target) {
  return timed(target);
}
