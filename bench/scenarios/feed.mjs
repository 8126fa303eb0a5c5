import { Agent, fetch } from 'undici';
import { openDatabase } from '../lib/database.mjs';
import { expectOk, requestJson } from '../lib/http.mjs';
import { median, percentile, rss, sleep, waitFor } from '../lib/measure.mjs';
import { newId } from '../lib/rows.mjs';

/**
 * Scenario 9: the event feed (GET /v1/events).
 *  - throughput: N events of one account in the outbox, read through the cursor by one client, 1,000 per
 *    page; events/s from the first request to the last page, beside a baseline: the same rows read
 *    straight from the database by the same keyset (the floor of what the HTTP route adds);
 *  - long polls: 1,000 clients (over 10 accounts) each hold `wait=30` requests; folders are created through
 *    the API, one a second (each a folder.created event committed in the server, waking the 100 clients of
 *    its account), and per client and event the time from
 *    the event's timestamp to the answer reaching the client is taken; the server's RSS is read with every
 *    client waiting.
 */
export async function feedScenario(ctx) {
  const { environment, server, options } = ctx;
  const total = options.quick ? 20_000 : 100_000;
  const clientsTotal = 1_000;
  const accountsTotal = 10;
  const rounds = options.quick ? 15 : 60;
  /** One event a second, each waking the 100 clients of its account: latency, not saturation, is measured. */
  const roundMs = 1000;
  const rows = [];
  const raw = {};

  const db = await openDatabase(environment.databaseUrl);
  // 1,000 long polls from one process: one pool without a connection cap.
  const dispatcher = new Agent({ connections: null, keepAliveTimeout: 60_000, headersTimeout: 0, bodyTimeout: 0, connect: { timeout: 60_000 } });
  const getJson = async (url, headers, signal) => {
    const response = await fetch(url, { headers, signal, dispatcher });
    const body = await response.json();
    if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${JSON.stringify(body).slice(0, 300)}`);
    return body;
  };
  try {
    // Throughput.
    const reader = await environment.createAccount('bench feed reader');
    const occurredAt = new Date().toISOString();
    for (let i = 0; i < total; i += 10_000) {
      const chunk = Array.from({ length: Math.min(10_000, total - i) }, (_, j) => ({
        id: newId('evt'),
        account_id: reader.accountId,
        event: 'file.uploaded',
        payload: JSON.stringify({ file: { id: newId('file'), name: `f${i + j}.bin`, size: 1024, type: 'application/octet-stream', folder_id: null, uploaded_by: reader.userId, created_at: occurredAt } }),
        occurred_at: occurredAt,
        relayed_at: null,
      }));
      await db.insertMany('outbox_events', chunk);
    }
    await waitFor(async () => (await db.query('SELECT id FROM outbox_events WHERE feed_position IS NULL LIMIT 1')).length === 0, {
      timeoutMs: 300_000,
      what: 'every event stamped with its feed position',
    });
    const readRuns = [];
    const baselineRuns = [];
    for (let run = 0; run < options.runs; run++) {
      let cursor;
      let count = 0;
      const started = performance.now();
      for (;;) {
        const query = new URLSearchParams({ limit: '1000', ...(cursor ? { after: cursor } : {}) });
        const page = await getJson(`${server.url}/v1/events?${query}`, reader.auth);
        count += page.data.length;
        cursor = page.next_cursor;
        if (page.data.length === 0) break;
      }
      const ms = performance.now() - started;
      readRuns.push({ events: count, ms, perSecond: count / (ms / 1000) });

      const p = (n) => (db.kind === 'postgres' ? `$${n}` : '?');
      let position = 0;
      let direct = 0;
      const baselineStarted = performance.now();
      for (;;) {
        const page = await db.query(
          `SELECT id, event, payload, occurred_at, feed_position FROM outbox_events WHERE account_id = ${p(1)} AND feed_position > ${p(2)} ORDER BY feed_position LIMIT 1000`,
          [reader.accountId, position],
        );
        if (page.length === 0) break;
        for (const row of page) JSON.parse(row.payload);
        direct += page.length;
        position = Number(page[page.length - 1].feed_position);
      }
      const baselineMs = performance.now() - baselineStarted;
      baselineRuns.push({ events: direct, ms: baselineMs, perSecond: direct / (baselineMs / 1000) });
    }
    const readRate = median(readRuns.map((r) => r.perSecond));
    const baselineRate = median(baselineRuns.map((r) => r.perSecond));
    const complete = readRuns.every((r) => r.events === total);
    rows.push({
      metric: `feed read by one client, ${total.toLocaleString('en')} events, 1,000 per page`,
      value: readRate,
      unit: '/s',
      detail: `${complete ? 'every event read' : 'EVENTS MISSING'}; direct database keyset ${Math.round(baselineRate).toLocaleString('en')}/s (x${(readRate / baselineRate).toFixed(2)})`,
      pass: complete,
    });
    raw.throughput = { readRuns, baselineRuns };

    // Long polls.
    const accounts = [];
    for (let i = 0; i < accountsTotal; i++) accounts.push(await environment.createAccount(`bench feed ${i}`));
    const rssBefore = rss.currentMiB(server.pid);
    const abort = new AbortController();
    const latencies = [];
    let answered = 0;
    let failures = 0;
    let firstFailure = null;
    let inFlight = 0;
    let opened = 0;
    const clients = Array.from({ length: clientsTotal }, async (_, i) => {
      const account = accounts[i % accountsTotal];
      // Connections are opened 50 at a time, as clients arrive, not all in one instant.
      while (opened < i - 50) await sleep(20);
      let cursor;
      while (cursor === undefined && !abort.signal.aborted) {
        cursor = await getJson(`${server.url}/v1/events?limit=1`, account.auth).then(
          (page) => page.next_cursor,
          async () => {
            failures++;
            await sleep(200);
            return undefined;
          },
        );
      }
      opened++;
      while (!abort.signal.aborted) {
        try {
          inFlight++;
          const page = await getJson(`${server.url}/v1/events?${new URLSearchParams({ after: cursor, wait: '30', limit: '100' })}`, account.auth, abort.signal);
          const at = Date.now();
          for (const event of page.data) latencies.push(at - Date.parse(event.timestamp));
          answered++;
          cursor = page.next_cursor;
        } catch (error) {
          if (!abort.signal.aborted) {
            failures++;
            firstFailure ??= String(error?.cause?.code ?? error?.message ?? error).slice(0, 200);
          }
          if (!abort.signal.aborted) await sleep(100);
        } finally {
          inFlight--;
        }
      }
    });
    // Every client waiting before the first event.
    await waitFor(async () => inFlight === clientsTotal, { timeoutMs: 180_000, what: `${clientsTotal} long polls open` }).catch((error) => {
      abort.abort();
      throw error;
    });
    await sleep(2000);
    const rssWaiting = rss.currentMiB(server.pid);
    rss.reset(server.pid);
    for (let round = 0; round < rounds; round++) {
      const account = accounts[round % accountsTotal];
      const created = await requestJson('POST', `${server.url}/v1/folders`, { headers: account.auth, body: { name: `round ${round}` } });
      expectOk(created, 'POST /v1/folders');
      // The clients of that account answer, then wait again before the next round.
      await sleep(roundMs);
    }
    const expected = rounds * (clientsTotal / accountsTotal);
    await waitFor(async () => latencies.length >= expected, { timeoutMs: 60_000, what: `${expected} event arrivals` }).catch(() => undefined);
    const rssPeak = rss.peakMiB(server.pid);
    abort.abort();
    await Promise.allSettled(clients);
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    rows.push({
      metric: `${clientsTotal.toLocaleString('en')} long-polling clients: event to client`,
      value: p99,
      unit: 'ms',
      detail: `p50 ${p50} ms, ${latencies.length} of ${expected} arrivals${failures ? `, ${failures} failed requests (first: ${firstFailure})` : ''}`,
      target: 'p99 < 250 ms',
      pass: p99 < 250 && latencies.length >= expected,
    });
    rows.push({
      metric: `server RSS with ${clientsTotal.toLocaleString('en')} long polls waiting`,
      value: rssWaiting,
      unit: 'MiB',
      detail: `${Math.round(rssWaiting - rssBefore)} MiB more than before they connected; peak while events flowed ${Math.round(rssPeak)} MiB`,
    });
    raw.longPoll = { clients: clientsTotal, accounts: accountsTotal, rounds, arrivals: latencies.length, expected, failures, firstFailure, answered, p50, p99, rssBefore, rssWaiting, rssPeak };
    return { rows, raw };
  } finally {
    await db.close();
    await dispatcher.close().catch(() => undefined);
  }
}
