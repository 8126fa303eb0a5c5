import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { openDatabase } from '../lib/database.mjs';
import { expectOk, requestJson } from '../lib/http.mjs';
import { load } from '../lib/load.mjs';
import { median, percentile } from '../lib/measure.mjs';
import { ROOT, startNode } from '../lib/processes.mjs';
import { fileRow, insertFiles } from '../lib/rows.mjs';

/** Every sort order of GET /v1/files (the specification's list). */
const SORTS = ['name_asc', 'name_desc', 'created_asc', 'created_desc', 'modified_asc', 'modified_desc', 'size_asc', 'size_desc'];
/** The sorts the size targets are judged on. */
const JUDGED_SORTS = ['name_asc', 'created_desc', 'size_desc'];
/** A word no generated name contains; planted in RARE_MATCHES names spread over the account. */
const RARE_WORD = 'zebra';
const RARE_MATCHES = 7;
const DEEP_PAGE = 500;
const PER_PAGE = 100;

/** The targets run under load at every size; `deep` ones need more than DEEP_PAGE pages of files. */
export const LISTING_VARIANTS = {
  name_asc: `per_page=${PER_PAGE}&sort=name_asc`,
  created_desc: `per_page=${PER_PAGE}&sort=created_desc`,
  size_desc: `per_page=${PER_PAGE}&sort=size_desc`,
  search: `per_page=${PER_PAGE}&search=report`,
  search_rare: `per_page=${PER_PAGE}&search=${RARE_WORD}`,
  // Two characters no trigram index serves, in no name: the whole listing's sort index is walked (docs/files.md, Search).
  search_short: `per_page=${PER_PAGE}&search=zq`,
};
const DEEP_VARIANTS = Object.fromEntries(JUDGED_SORTS.map((sort) => [`page ${DEEP_PAGE} ${sort}`, `per_page=${PER_PAGE}&sort=${sort}&page=${DEEP_PAGE}`]));

/**
 * Hook for keyset cursors (issue #18, h18-cursor): further targets per account, e.g. the last page of
 * the largest account reached through `cursor`, judged against page 1. Answers { name: { url, headers } }.
 */
export async function cursorTargets(/* { serverUrl, account, files, label } */) {
  return {};
}

const label = (n) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1_000}k`);
const count = (n) => n.toLocaleString('en');

/**
 * Scenario 3: GET /v1/files under autocannon for accounts with 1,000, 100,000 and (with --files 1000000)
 * 1,000,000 files (rows inserted directly): three sorts, a common and a rare search, and page 500 by
 * number; then, one request at a time, page 1 and page 500 of every sort order on the largest account.
 * Side by side with a bare NestJS route (the framework ceiling). Targets rotate from run to run.
 */
export async function listingScenario(ctx) {
  const { environment, server, options } = ctx;
  const sizes = [...new Set([1_000, 100_000, options.files ?? 100_000])].sort((a, b) => a - b);
  const largest = sizes.at(-1);
  const accounts = {};
  const db = await openDatabase(environment.databaseUrl);
  const insertStarted = performance.now();
  const insertSeconds = {};
  try {
    for (const n of sizes) {
      const started = performance.now();
      const account = (accounts[n] = await environment.createAccount(`bench listing ${label(n)}`));
      const rare = new Set(Array.from({ length: RARE_MATCHES }, (_, k) => Math.floor(((k + 0.5) * n) / RARE_MATCHES)));
      await insertFiles(db, account, n, {
        row: (i) => {
          const row = fileRow(account, i);
          if (rare.has(i)) Object.assign(row, { name: `${RARE_WORD}-crossing ${i}.pdf`, name_key: `${RARE_WORD}-crossing ${i}.pdf` });
          return row;
        },
      });
      insertSeconds[label(n)] = (performance.now() - started) / 1000;
      ctx.log?.(`listing: ${count(n)} files inserted in ${insertSeconds[label(n)].toFixed(0)} s`);
    }
  } finally {
    await db.close();
  }
  const insertMs = performance.now() - insertStarted;

  // The route exists and sees the rows.
  for (const n of sizes) {
    const body = expectOk(await requestJson('GET', `${server.url}/v1/files?per_page=100`, { headers: accounts[n].auth }), 'GET /v1/files');
    if (body.pagination?.total_items !== n || body.data?.length !== 100) {
      throw new Error(`GET /v1/files for ${label(n)} answered total_items ${body.pagination?.total_items} with ${body.data?.length} items`);
    }
    const rare = expectOk(await requestJson('GET', `${server.url}/v1/files?search=${RARE_WORD}`, { headers: accounts[n].auth }), 'search');
    if (rare.pagination?.total_items !== RARE_MATCHES) throw new Error(`search=${RARE_WORD} for ${label(n)} found ${rare.pagination?.total_items}`);
  }

  const bare = await startNode(resolve(ROOT, 'bench/baselines/nest-bare.mjs'), [], { NODE_ENV: 'production' }, { readyText: 'LISTENING' });
  const bareUrl = `http://127.0.0.1:${/LISTENING (\d+)/.exec(bare.output())[1]}/v1/ping`;
  const targets = { bare: { url: bareUrl, headers: {} } };
  for (const n of sizes) {
    const variants = { ...LISTING_VARIANTS, ...(n >= DEEP_PAGE * PER_PAGE ? DEEP_VARIANTS : {}) };
    for (const [variant, query] of Object.entries(variants)) {
      targets[`${label(n)} ${variant}`] = { url: `${server.url}/v1/files?${query}`, headers: accounts[n].auth };
    }
    Object.assign(targets, await cursorTargets({ serverUrl: server.url, account: accounts[n], files: n, label: label(n) }));
  }
  const runs = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
  const settings = { connections: options.connections, duration: options.quick ? 1 : 5 };
  const alone = {};
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
    // Every sort order, page 1 against page 500, one request at a time, interleaved.
    if (largest >= DEEP_PAGE * PER_PAGE) {
      for (const sort of SORTS) {
        const first = { url: `${server.url}/v1/files?per_page=${PER_PAGE}&sort=${sort}`, headers: accounts[largest].auth };
        const deep = { url: `${first.url}&page=${DEEP_PAGE}`, headers: first.headers };
        const samples = { first: [], deep: [] };
        await timed(first);
        await timed(deep);
        for (let k = 0; k < (options.quick ? 10 : 30); k++) {
          samples.first.push(await timed(first));
          samples.deep.push(await timed(deep));
        }
        alone[sort] = samples;
      }
    }
  } finally {
    await bare.stop();
  }

  const m = (name, key) => median(runs[name].map((r) => r[key]));
  const ms = (v) => (Number.isFinite(v) ? `${v} ms` : 'n/a');
  const latency = (name) => `p50 ${ms(m(name, 'p50'))}, p99 ${ms(m(name, 'p99'))}; alone ${m(name, 'unloadedP50').toFixed(1)} ms`;
  const rows = [{ metric: 'bare NestJS route', value: m('bare', 'rps'), unit: 'req/s', detail: latency('bare') }];
  for (const name of Object.keys(targets)) {
    if (name === 'bare') continue;
    const [size, ...variant] = name.split(' ');
    const n = sizes.find((s) => label(s) === size);
    rows.push({ metric: `list ${count(n)} files, ${variant.join(' ')}`, value: m(name, 'rps'), unit: 'req/s', baseline: 'bare NestJS', baselineValue: m('bare', 'rps'), detail: latency(name) });
  }
  for (const variant of [...JUDGED_SORTS, 'search']) {
    const p99 = m(`100k ${variant}`, 'p99');
    rows.push({ metric: `p99 at 100,000 files, ${variant}`, value: p99, unit: 'ms', detail: Number.isFinite(p99) ? undefined : 'fewer than 5 answers per run', target: '< 25 ms', pass: p99 < 25 });
  }
  for (const variant of JUDGED_SORTS) {
    const big = m(`${label(largest)} ${variant}`, 'p50');
    const small = m(`1k ${variant}`, 'p50');
    const aloneDetail = `alone: ${m(`${label(largest)} ${variant}`, 'unloadedP50').toFixed(1)} vs ${m(`1k ${variant}`, 'unloadedP50').toFixed(1)} ms`;
    rows.push({ metric: `p50 ${count(largest)} vs 1,000, ${variant}`, value: big, unit: 'ms', detail: aloneDetail, baseline: 'p50 at 1,000', baselineValue: small, target: '<= 1.5x', pass: big / small <= 1.5 });
  }
  {
    const name = `${label(largest)} search_rare`;
    const p50 = m(name, 'p50');
    const p99 = m(name, 'p99');
    rows.push({ metric: `search, ${RARE_MATCHES} matches in ${count(largest)} files: p50`, value: p50, unit: 'ms', detail: `alone ${m(name, 'unloadedP50').toFixed(1)} ms`, target: '< 20 ms', pass: p50 < 20 });
    rows.push({ metric: `search, ${RARE_MATCHES} matches in ${count(largest)} files: p99`, value: p99, unit: 'ms', target: '< 50 ms', pass: p99 < 50 });
  }
  for (const n of sizes.filter((s) => s >= DEEP_PAGE * PER_PAGE)) {
    for (const sort of JUDGED_SORTS) {
      const deep = m(`${label(n)} page ${DEEP_PAGE} ${sort}`, 'p50');
      const first = m(`${label(n)} ${sort}`, 'p50');
      rows.push({ metric: `page ${DEEP_PAGE} vs page 1, ${count(n)} files, ${sort}, ${options.connections} connections (p50)`, value: deep, unit: 'ms', baseline: 'page 1', baselineValue: first, target: '<= 2x', pass: deep / first <= 2 });
    }
  }
  for (const [sort, samples] of Object.entries(alone)) {
    const deep = median(samples.deep);
    const first = median(samples.first);
    rows.push({
      metric: `page ${DEEP_PAGE} vs page 1, ${count(largest)} files, ${sort}, alone (p50)`,
      value: Number(deep.toFixed(1)),
      unit: 'ms',
      detail: `p99 ${percentile(samples.deep, 99).toFixed(1)} vs ${percentile(samples.first, 99).toFixed(1)} ms`,
      baseline: 'page 1',
      baselineValue: Number(first.toFixed(1)),
      target: '<= 2x',
      pass: deep / first <= 2,
    });
  }
  // The last page by keyset cursor next to page 1, at 100,000 files (cursorPageRows).
  const cursors = await cursorPageRows(server, accounts[100_000], 100_000, settings);
  rows.push(...cursors.rows);
  return { rows, raw: { settings, sizes, insertMs, insertSeconds, runs, alone, cursors: cursors.raw } };
}

export const CURSOR_SORTS = ['name_asc', 'created_desc', 'size_desc'];

/**
 * The last page of a large listing through a keyset cursor next to page 1, for each sort, alone (requests
 * one after the other) and under load (autocannon, the scenario's connections): the cursor's page is an index
 * range starting at its position, so it should cost what page 1 does (target: within 1.2x). Also the server's
 * CPU time per list request (Linux: /proc/<pid>/stat around a load run of page 1).
 */
async function cursorPageRows(server, account, n, settings) {
  const rows = [];
  const raw = {};
  for (const sort of CURSOR_SORTS) {
    const first = `${server.url}/v1/files?per_page=100&sort=${sort}`;
    const { pagination } = expectOk(await requestJson('GET', first, { headers: account.auth }), 'GET /v1/files');
    // The page before the last, by number, hands out the cursor of the last page.
    const beforeLast = expectOk(await requestJson('GET', `${first}&page=${pagination.total_pages - 1}`, { headers: account.auth }), 'GET /v1/files?page');
    const last = `${first}&cursor=${encodeURIComponent(beforeLast.pagination.next_cursor)}`;
    const lastPage = expectOk(await requestJson('GET', last, { headers: account.auth }), 'GET /v1/files?cursor');
    if (lastPage.pagination.next_cursor !== null || lastPage.data.length !== n - (pagination.total_pages - 1) * 100) {
      throw new Error(`the last page of ${sort} by cursor answered ${lastPage.data.length} items and next_cursor ${lastPage.pagination.next_cursor}`);
    }
    const targets = { first: { url: first, headers: account.auth }, last: { url: last, headers: account.auth } };
    const alone = { first: [], last: [] };
    // A hundred each, alternated: with fifteen (until session 9) the ratio of two medians near 2 ms swung 1.0–1.5x between runs.
    for (let k = 0; k < 100; k++) for (const name of ['first', 'last']) alone[name].push(await timed(targets[name]));
    for (const name of ['first', 'last']) await load(targets[name].url, { ...settings, headers: account.auth, duration: 1 }); // warm-up
    // Three rounds, alternated, medians taken: single one-second runs of one target after the other differed by up to
    // 1.5x between runs of one commit (session 9).
    const rounds = { first: [], last: [] };
    for (let round = 0; round < 3; round++) {
      for (const name of ['first', 'last']) {
        const cpuBefore = serverCpuMs(server.pid);
        const result = await load(targets[name].url, { ...settings, headers: account.auth });
        const cpu = serverCpuMs(server.pid);
        if (result.non2xx || result.errors) throw new Error(`${sort} ${name}: ${result.non2xx} non-2xx answers and ${result.errors} errors under load`);
        await drain(targets[name]);
        rounds[name].push({ ...result, cpuMsPerRequest: cpu === null || cpuBefore === null ? NaN : (cpu - cpuBefore) / result.requests });
      }
    }
    const loaded = Object.fromEntries(
      Object.entries(rounds).map(([name, runs]) => [
        name,
        { requests: Math.min(...runs.map((r) => r.requests)), ...Object.fromEntries(['p50', 'p99', 'cpuMsPerRequest'].map((key) => [key, median(runs.map((r) => r[key]))])) },
      ]),
    );
    raw[sort] = { alone, loaded, rounds };
    const answered = loaded.first.requests >= 5 && loaded.last.requests >= 5;
    const aloneFirst = median(alone.first);
    const aloneLast = median(alone.last);
    rows.push({ metric: `last page by cursor vs page 1, ${sort}, alone`, value: aloneLast, unit: 'ms', baseline: 'page 1', baselineValue: aloneFirst, target: '<= 1.2x', pass: aloneLast / aloneFirst <= 1.2 });
    rows.push({
      metric: `last page by cursor vs page 1, ${sort}, ${settings.connections} connections`,
      value: loaded.last.p50,
      unit: 'ms',
      baseline: 'page 1 p50',
      baselineValue: loaded.first.p50,
      detail: answered ? `p99 ${loaded.last.p99} vs ${loaded.first.p99} ms` : 'fewer than 5 answers in a run',
      target: '<= 1.2x',
      pass: answered ? loaded.last.p50 / loaded.first.p50 <= 1.2 : undefined,
    });
    const cpu = (name) => (loaded[name].requests >= 5 ? loaded[name].cpuMsPerRequest : NaN);
    rows.push({ metric: `server CPU per list request, ${sort}, page 1`, value: cpu('first'), unit: 'ms', detail: `last page by cursor: ${cpu('last').toFixed(2)} ms` });
  }
  return { rows, raw };
}

/** User + system CPU time of a process so far, in ms; null where /proc is not there. */
function serverCpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
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
