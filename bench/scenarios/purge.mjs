import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { openDatabase } from '../lib/database.mjs';
import { createEnvironment } from '../lib/environment.mjs';
import { expectOk, requestJson } from '../lib/http.mjs';
import { load } from '../lib/load.mjs';
import { median, NotAvailable, sleep } from '../lib/measure.mjs';
import { fileRow, insertFiles } from '../lib/rows.mjs';

const CRON_SECONDS = 2;
// About 40% of what one server answers for this listing on the 2-core machine (230 to 280 req/s), so the
// figure shows the purge's effect on latency rather than a saturated server.
const LISTING_RATE = 100;

/**
 * Scenario 5: N trashed files whose recovery window has passed (rows inserted directly, each with its
 * own 1-byte blob on disk), purged while a steady 100 req/s of GET /v1/files runs against another account.
 *
 * How the purge runs (--purge-via):
 *  - job (default): the way production purges, by the server's own scheduled job, here with
 *    TRASH_PURGE_CRON every 2 seconds. The purge shares the event loop (and, on SQLite, the single
 *    connection) with the listing, which is exactly what the listing p99 target is about. The purge
 *    starts at the first cron tick after the rows are committed and ends when no expired row is left.
 *  - cli: `node dist/cli.js trash purge`, wall time of the process (includes its ~1 s start-up).
 * Runs in its own deployment, so its cron never disturbs the other scenarios.
 */
export async function purgeScenario(ctx) {
  const { options } = ctx;
  const n = options.quick ? 10_000 : 100_000;
  const environment = await createEnvironment(options.db, 'purge', { ...options.serverEnv, TRASH_PURGE_CRON: `*/${CRON_SECONDS} * * * * *` });
  let via = options.purgeVia;
  try {
    const server = await environment.startServer();
    const reader = await environment.createAccount('bench purge reader');
    const owner = await environment.createAccount('bench purge owner');
    const db = await openDatabase(environment.databaseUrl);
    const listingUrl = `${server.url}/v1/files?per_page=100`;
    try {
      await insertFiles(db, reader, 1_000);
      expectOk(await requestJson('GET', listingUrl, { headers: reader.auth }), 'GET /v1/files');
      const listing = (extra) => load(listingUrl, { headers: reader.auth, connections: options.connections, overallRate: LISTING_RATE, ...extra });
      await listing({ duration: 1 }); // warm-up

      const runs = [];
      const started = Date.now();
      const wanted = options.quick ? 1 : options.runs;
      const timeBoxMs = options.quick ? 45_000 : 120_000;
      for (let run = 0; run < wanted; run++) {
        if (run > 0 && Date.now() - started > 150_000) break; // time box for the whole suite
        const idle = await listing({ duration: options.quick ? 2 : 3 });
        const { expired, bytes } = await seedExpiredTrash(db, environment.storageDir, owner, n);
        const remaining = async () => Number((await db.query("SELECT COUNT(*) AS n FROM files WHERE account_id = $1 AND state = 'trashed'", [owner.accountId]))[0].n);

        const abort = new AbortController();
        let unfinished = null;
        const during = listing({ duration: 600, signal: abort.signal });
        let ms;
        try {
          if (via === 'job') {
            const committed = Date.now();
            const tick = Math.ceil(committed / (CRON_SECONDS * 1000)) * CRON_SECONDS * 1000;
            // The job must have made a dent within a few ticks, or this build has no scheduled purge.
            const deadline = tick + 4 * CRON_SECONDS * 1000 + 5_000;
            let left = await remaining();
            while (left === expired && Date.now() < deadline) {
              await sleep(50);
              left = await remaining();
            }
            // A purge already under way (a late tick) can take the new rows before the expected tick: then it is
            // timed from the commit, the earliest it can have started, never from a tick after it began.
            const start = Date.now() < tick ? committed : tick;
            if (left === expired) {
              if (run > 0) throw new Error('the scheduled purge stopped working');
              via = 'cli'; // no scheduled purge in this build: fall back to the command line
            } else {
              // Time box: a purge far slower than the target is measured for a while and extrapolated.
              const giveUpAt = tick + timeBoxMs;
              while (left > 0 && Date.now() < giveUpAt) {
                await sleep(50);
                left = await remaining();
              }
              ms = Date.now() - start;
              if (left > 0) {
                unfinished = { purged: expired - left, ms, perSecond: (expired - left) / (ms / 1000) };
                ms = (expired / Math.max(1, expired - left)) * ms; // extrapolated at the rate seen
              }
            }
          }
          if (via === 'cli') {
            const result = await environment.cli(['trash', 'purge'], { timeoutMs: 300_000 }).catch((error) => {
              if (/unknown command|error: unknown/i.test(error.message)) throw new NotAvailable('`cli trash purge` not in this build');
              throw error;
            });
            ms = result.ms;
            if (result.json.purged < expired) throw new Error(`trash purge answered ${JSON.stringify(result.json)}, expected ${expired} purged`);
            const left = await remaining();
            if (left !== 0) throw new Error(`${left} expired files left after trash purge`);
          }
        } finally {
          abort.abort();
        }
        const meanwhile = await during;
        const used = Number((await db.query('SELECT storage_used AS used FROM accounts WHERE id = $1', [owner.accountId]))[0].used);
        runs.push({ files: expired, bytes, ms, via, unfinished, idle, meanwhile, storageUsedAfter: used });
        if (unfinished) break; // the rest is still being purged; another run would measure a mix
        if (meanwhile.non2xx || meanwhile.errors) throw new Error(`listing during the purge: ${meanwhile.non2xx} non-2xx, ${meanwhile.errors} errors`);
      }
      const seconds = median(runs.map((r) => r.ms)) / 1000;
      const scaled = seconds * (100_000 / n);
      const p99 = median(runs.map((r) => r.meanwhile.p99));
      const idleP99 = median(runs.map((r) => r.idle.p99));
      return {
        rows: [
          {
            metric: `purge ${n.toLocaleString('en')} expired files (${via})`,
            value: seconds,
            unit: 's',
            detail: [
              n === 100_000 ? null : `${scaled.toFixed(1)} s scaled to 100,000`,
              runs.some((r) => r.unfinished) ? `extrapolated: only ${runs.find((r) => r.unfinished).unfinished.purged} purged in ${(timeBoxMs / 1000).toFixed(0)} s` : null,
            ].filter(Boolean).join('; ') || undefined,
            // The purge does more work per file the larger the backlog (see docs/bench.md), so a time scaled
            // up from a smaller run flatters it: the target is judged at 100,000 files only.
            target: n === 100_000 ? '< 60 s' : '< 60 s (judged at 100,000 only)',
            pass: n === 100_000 ? scaled < 60 : undefined,
          },
          { metric: `listing p99 during purge (${LISTING_RATE} req/s)`, value: p99, unit: 'ms', baseline: 'p99 idle', baselineValue: idleP99, target: '< 100 ms', pass: p99 < 100 },
        ],
        raw: { files: n, cronSeconds: CRON_SECONDS, listingRate: LISTING_RATE, runs },
      };
    } finally {
      await db.close();
    }
  } finally {
    await environment.dispose();
  }
}

/**
 * n trashed files whose window closed an hour ago, each with a 1-byte blob where the upload would have put
 * it. Blobs first, then storage_used, then all rows in ONE transaction: the job sees all of them or none,
 * so the purge starts at a known cron tick and never meets a row whose blob is still being written.
 */
async function seedExpiredTrash(db, storageDir, account, n) {
  const now = Date.now();
  const deletedAt = new Date(now - 31 * 24 * 3600 * 1000).toISOString();
  const until = new Date(now - 3600 * 1000).toISOString();
  const rows = [];
  for (let i = 0; i < n; i++) {
    const row = fileRow(account, i, { now, size: 1 });
    Object.assign(row, { state: 'trashed', deleted_at: deletedAt, deleted_by: account.userId, recoverable_until: until });
    rows.push(row);
  }
  for (let i = 0; i < rows.length; i += 200) {
    await Promise.all(
      rows.slice(i, i + 200).map(async ({ blob_key: key }) => {
        const path = join(storageDir, key);
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, 'x');
      }),
    );
  }
  await db.query('UPDATE accounts SET storage_used = storage_used + $1 WHERE id = $2', [n, account.accountId]);
  await db.insertMany('files', rows);
  await db.analyze('files');
  return { expired: n, bytes: n };
}
