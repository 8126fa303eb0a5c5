import { randomBytes } from 'node:crypto';
import { Agent, createServer, request as httpRequest } from 'node:http';
import { Queue, Worker } from 'bullmq';
import Redis from 'ioredis';
import { openDatabase } from '../lib/database.mjs';
import { expectOk, requestJson } from '../lib/http.mjs';
import { cpuMs, median, percentile, sleep } from '../lib/measure.mjs';
import { freePort } from '../lib/processes.mjs';
import { newId } from '../lib/rows.mjs';

/**
 * Scenario 4: events committed to the outbox (as the upload command does, in its transaction) and fanned
 * out by the server's relay and delivery worker to a local receiver.
 *  - throughput: N events committed at once; deliveries/s from the commit to the last arrival;
 *  - latency: events committed steadily at 1,000/s (the throughput target) in small transactions;
 *    per event, arrival at the receiver minus occurred_at (the commit time; same clock);
 *  - latency through the API: 1 KB uploads at concurrency 32 for a few seconds, per upload the arrival of
 *    its file.uploaded delivery minus the moment its answer was read (negative when the delivery came first); next to a bare BullMQ queue and
 *    worker (in this process) POSTing to the same receiver, one job added per upload answer, during the
 *    same uploads.
 */
export async function webhooksScenario(ctx) {
  const { environment, server, options } = ctx;
  const burstSize = options.quick ? 2_000 : 10_000;
  const pacedSize = options.quick ? 1_000 : 5_000;
  const pacedRate = 1_000;

  const arrivals = new Map();
  let arrivalCount = 0;
  let lastArrival = 0;
  const receiver = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      res.writeHead(200).end();
      try {
        const fileId = JSON.parse(Buffer.concat(chunks).toString('utf8')).data?.file?.id;
        if (fileId && !arrivals.has(fileId)) {
          arrivals.set(fileId, at);
          arrivalCount++;
          lastArrival = at;
        }
      } catch {
        // a body we did not send; ignored
      }
    });
  });
  const port = await freePort();
  await new Promise((r) => receiver.listen(port, '127.0.0.1', r));

  const account = await environment.createAccount('bench webhooks');
  const db = await openDatabase(environment.databaseUrl);
  // This process commits outbox rows as another server process would, so it tells the relay the same way.
  const signal = new Redis(environment.env.REDIS_URL, { maxRetriesPerRequest: 1 });
  const committed = () => signal.publish(`${environment.env.REDIS_KEY_PREFIX}:outbox-committed`, 'bench').catch(() => undefined);
  try {
    const created = await requestJson('POST', `${server.url}/v1/webhooks`, {
      headers: account.auth,
      body: { url: `http://127.0.0.1:${port}/hook`, events: ['file.uploaded'] },
    });
    expectOk(created, 'POST /v1/webhooks');

    const eventRow = (occurredAt) => {
      const fileId = newId('file');
      const row = {
        id: newId('evt'),
        account_id: account.accountId,
        event: 'file.uploaded',
        payload: JSON.stringify({
          file: { id: fileId, name: `${fileId}.bin`, size: 1024, type: 'application/octet-stream', folder_id: null, uploaded_by: account.userId, created_at: occurredAt },
        }),
        occurred_at: occurredAt,
        relayed_at: null,
      };
      return { row, fileId };
    };
    // Time box per wait: a pipeline far below the target is measured for a while, not waited out.
    const timeBoxMs = options.quick ? 30_000 : 90_000;
    const waitForAll = async (ids, what) => {
      let seen = -1;
      let lastProgress = Date.now();
      const giveUpAt = Date.now() + timeBoxMs;
      for (;;) {
        const done = ids.filter((id) => arrivals.has(id)).length;
        if (done === ids.length) return true;
        if (Date.now() > giveUpAt) return false;
        if (done !== seen) {
          seen = done;
          lastProgress = Date.now();
        } else if (Date.now() - lastProgress > 20_000) {
          throw new Error(`${what}: ${done} of ${ids.length} deliveries arrived, then none for 20 s`);
        }
        await sleep(20);
      }
    };

    const burstRuns = [];
    const pacedRuns = [];
    for (let run = 0; run < options.runs; run++) {
      // Throughput: one commit of N events.
      const occurredAt = new Date().toISOString();
      const batch = Array.from({ length: burstSize }, () => eventRow(occurredAt));
      const cpuBefore = cpuMs(server.pid);
      await db.insertMany('outbox_events', batch.map((e) => e.row));
      void committed();
      const committedAt = Date.now();
      const firstCount = arrivalCount;
      const complete = await waitForAll(batch.map((e) => e.fileId), 'burst');
      const got = batch.filter((e) => arrivals.has(e.fileId));
      const ms = (complete ? Math.max(...got.map((e) => arrivals.get(e.fileId))) : Date.now()) - committedAt;
      // Server CPU per delivery (relay, queue, attempt, log), robust to what else runs on the machine; read after
      // the last arrival, so attempts logged after it are counted only in part.
      const cpuMsPerDelivery = (cpuMs(server.pid) - cpuBefore) / Math.max(1, got.length);
      burstRuns.push({ events: burstSize, delivered: got.length, complete, ms, perSecond: got.length / (ms / 1000), arrived: arrivalCount - firstCount, cpuMsPerDelivery });

      if (!complete) break; // a backlog is still draining; a paced run now would measure the backlog

      // Latency: a steady stream at the target rate, in commits of 20 events every 20 ms.
      const perCommit = 20;
      const sent = [];
      const started = Date.now();
      for (let i = 0; i < pacedSize; i += perCommit) {
        const due = started + (i / pacedRate) * 1000;
        if (due > Date.now()) await sleep(due - Date.now());
        const at = new Date().toISOString();
        const events = Array.from({ length: Math.min(perCommit, pacedSize - i) }, () => eventRow(at));
        await db.insertMany('outbox_events', events.map((e) => e.row));
        void committed();
        for (const e of events) sent.push({ fileId: e.fileId, occurredMs: Date.parse(at) });
      }
      const offeredMs = Date.now() - started;
      const streamed = await waitForAll(sent.map((e) => e.fileId), 'paced stream');
      // Events still missing at the time box count with the time waited so far (a lower bound).
      const end = Date.now();
      const latencies = sent.map((e) => (arrivals.get(e.fileId) ?? end) - e.occurredMs);
      if (!streamed) {
        pacedRuns.push({ events: pacedSize, complete: false, p50: percentile(latencies, 50), p99: percentile(latencies, 99) });
        break;
      }
      pacedRuns.push({ events: pacedSize, complete: true, offeredPerSecond: pacedSize / (offeredMs / 1000), p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) });
    }

    const apiRuns = [];
    const bareRuns = [];
    for (let run = 0; run < options.runs; run++) {
      // The bare baseline runs during the same uploads: one bare job added as each upload is answered.
      const bare = await startBareQueue({ environment, receiverUrl: `http://127.0.0.1:${port}/hook` });
      try {
        apiRuns.push(await apiLatencyRun({ server, account, arrivals, seconds: options.quick ? 5 : 15, timeBoxMs, waitForAll, onAnswer: () => bare.add() }));
        bareRuns.push(await bare.results(arrivals, waitForAll));
      } finally {
        await bare.stop();
      }
    }
    const apiP50 = median(apiRuns.map((r) => r.p50));
    const apiP99 = median(apiRuns.map((r) => r.p99));
    const bareP50 = median(bareRuns.map((r) => r.p50));
    const bareP99 = median(bareRuns.map((r) => r.p99));
    const uploadRate = median(apiRuns.map((r) => r.uploadsPerSecond));

    const rate = median(burstRuns.map((r) => r.perSecond));
    const cpuPerDelivery = median(burstRuns.map((r) => r.cpuMsPerDelivery));
    const unfinished = burstRuns.some((r) => !r.complete) || pacedRuns.some((r) => !r.complete);
    const p50 = median(pacedRuns.map((r) => r.p50));
    const p99 = median(pacedRuns.map((r) => r.p99));
    return {
      rows: [
        {
          metric: `deliveries/s, ${burstSize.toLocaleString('en')} events at once`,
          value: rate,
          unit: '/s',
          detail: `${unfinished ? `time-boxed at ${timeBoxMs / 1000} s, not all delivered; ` : ''}server CPU ${cpuPerDelivery.toFixed(2)} ms per delivery`,
          target: '>= 1,000/s',
          pass: rate >= 1000,
        },
        { metric: `latency commit to receiver at ${pacedRate}/s`, value: p99, unit: 'ms', detail: `p50 ${p50} ms`, target: 'p99 < 250 ms', pass: p99 < 250 },
        {
          metric: 'latency upload answer to receiver, 1 KB uploads at concurrency 32',
          value: apiP99,
          unit: 'ms',
          // Negative: the delivery arrived before the uploading client had read its answer.
          detail: `p50 ${apiP50} ms at ${Math.round(uploadRate)} uploads/s; bare BullMQ p50 ${bareP50} / p99 ${bareP99} ms (${(apiP99 / bareP99).toFixed(1)}x)${apiP99 < 0 ? '; negative: delivered before the answer was read' : ''}`,
          target: 'p99 < 250 ms and <= 3x bare',
          pass: apiP99 < 250 && apiP99 <= 3 * bareP99,
        },
        { metric: 'latency bare BullMQ queue to receiver, during the same uploads', value: bareP99, unit: 'ms', detail: `p50 ${bareP50} ms`, target: 'baseline' },
      ],
      raw: { burstRuns, pacedRuns, apiRuns, bareRuns, lastArrival },
    };
  } finally {
    signal.disconnect();
    await db.close();
    const closed = new Promise((r) => receiver.close(r));
    receiver.closeAllConnections();
    await closed;
  }
}

const API_CONCURRENCY = 32;
const SMALL_FILE = 1024;

/**
 * Uploads 1 KB files through POST /v1/files/upload from 32 connections for `seconds`, then waits for
 * every file.uploaded delivery. Per upload: delivery arrival minus the moment the answer was read.
 */
async function apiLatencyRun({ server, account, arrivals, seconds, timeBoxMs, waitForAll, onAnswer }) {
  const agent = new Agent({ keepAlive: true, maxSockets: API_CONCURRENCY });
  const answered = new Map();
  let failures = 0;
  const stopAt = Date.now() + seconds * 1000;
  const started = Date.now();
  try {
    await Promise.all(
      Array.from({ length: API_CONCURRENCY }, async (_, worker) => {
        for (let i = 0; Date.now() < stopAt; i++) {
          const res = await uploadSmall(`${server.url}/v1/files/upload`, account.auth, `lat-${worker}-${i}-${randomBytes(3).toString('hex')}.bin`, agent);
          const at = Date.now();
          if (res.status !== 200 || !res.body?.data?.id) {
            failures++;
            if (failures > 20) throw new Error(`uploads fail: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
            continue;
          }
          answered.set(res.body.data.id, at);
          onAnswer();
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  const uploadsPerSecond = answered.size / ((Date.now() - started) / 1000);
  const ids = [...answered.keys()];
  const complete = await waitForAll(ids, 'uploads through the API');
  const end = Date.now();
  // Deliveries still missing at the time box count with the time waited so far (a lower bound).
  const latencies = ids.map((id) => (arrivals.get(id) ?? end) - answered.get(id));
  return { uploads: ids.length, failures, complete, uploadsPerSecond, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies), timeBoxMs };
}

function uploadSmall(url, headers, fileName, agent) {
  const boundary = `----bench${randomBytes(12).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    randomBytes(SMALL_FILE),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', agent, headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': body.length } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        let parsed = null;
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          parsed = null;
        }
        resolve({ status: res.statusCode, body: parsed });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The baseline: a bare BullMQ queue and worker (no database, no outbox) carrying a body of the same shape to
 * the same receiver; `add` queues one job. Per job: arrival minus the moment before `add`.
 */
async function startBareQueue({ environment, receiverUrl }) {
  const redisUrl = new URL(environment.env.REDIS_URL);
  const connection = { host: redisUrl.hostname, port: Number(redisUrl.port || 6379), maxRetriesPerRequest: null };
  const prefix = `${environment.env.REDIS_KEY_PREFIX}:bare`;
  const agent = new Agent({ keepAlive: true, maxSockets: 100 });
  const queue = new Queue('bare-deliveries', { connection, prefix });
  const worker = new Worker(
    'bare-deliveries',
    (job) =>
      new Promise((resolve, reject) => {
        const body = Buffer.from(JSON.stringify({ event: 'file.uploaded', data: { file: { id: job.data.fileId } } }));
        const req = httpRequest(receiverUrl, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
          res.resume();
          res.on('end', resolve);
        });
        req.on('error', reject);
        req.end(body);
      }),
    { connection, prefix, concurrency: 100 },
  );
  await worker.waitUntilReady();
  const sent = new Map();
  const adds = [];
  return {
    add() {
      const fileId = `bare_${randomBytes(8).toString('hex')}`;
      sent.set(fileId, Date.now());
      adds.push(queue.add('deliver', { fileId }, { removeOnComplete: true }));
    },
    async results(arrivals, waitForAll) {
      await Promise.all(adds);
      const ids = [...sent.keys()];
      const complete = await waitForAll(ids, 'bare BullMQ');
      const end = Date.now();
      const latencies = ids.map((id) => (arrivals.get(id) ?? end) - sent.get(id));
      return { jobs: ids.length, complete, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) };
    },
    async stop() {
      await worker.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      agent.destroy();
    },
  };
}

/**
 * Scenario 4b: webhook deliveries against a direct-send baseline. The baseline is what a service without a
 * queue would do at best: the bench process itself builds and signs the same deliveries (in-body signature,
 * X-Service-Signature, the Standard Webhooks headers) and POSTs them straight at the same receiver over
 * keep-alive connections, as many at once as the server's worker (WEBHOOK_DELIVERY_CONCURRENCY, default 100).
 * The service's figures are the same events committed to the outbox and delivered by relay, queue and worker.
 *  - throughput: N deliveries at once; deliveries/s from the start (direct) or the commit (service) to the
 *    last arrival; the ratio service / direct;
 *  - latency: a stream at 1,000 deliveries/s, per delivery arrival minus the moment it was due (direct) or
 *    committed (service); p99 of the service, beside the direct send's.
 */
export async function webhooksVersusDirectSendScenario(ctx) {
  const { environment, server, options } = ctx;
  const burstSize = options.quick ? 2_000 : 10_000;
  const pacedSize = options.quick ? 1_000 : 5_000;
  const pacedRate = 1_000;
  const concurrency = Number(options.serverEnv?.WEBHOOK_DELIVERY_CONCURRENCY ?? 100);
  const timeBoxMs = options.quick ? 30_000 : 90_000;
  // Imported here so this scenario stays one self-contained function beside scenario 4.
  const { createHmac, randomBytes } = await import('node:crypto');
  const { Agent, request } = await import('node:http');

  const arrivals = new Map();
  const receiver = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      res.writeHead(200).end();
      try {
        const fileId = JSON.parse(Buffer.concat(chunks).toString('utf8')).data?.file?.id;
        if (fileId && !arrivals.has(fileId)) arrivals.set(fileId, at);
      } catch {
        // a body we did not send; ignored
      }
    });
  });
  // Idle keep-alive connections stay open for the whole run, so no request meets a connection closing under it.
  receiver.keepAliveTimeout = 120_000;
  const port = await freePort();
  await new Promise((r) => receiver.listen(port, '127.0.0.1', r));
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });

  const account = await environment.createAccount('bench webhooks vs direct');
  const db = await openDatabase(environment.databaseUrl);
  // As in scenario 4: this process commits outbox rows as another server process would, so it wakes the relay the same way.
  const signal = new Redis(environment.env.REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const created = await requestJson('POST', `${server.url}/v1/webhooks`, {
      headers: account.auth,
      body: { url: `http://127.0.0.1:${port}/hook`, events: ['file.uploaded'], secret },
    });
    const webhookId = expectOk(created, 'POST /v1/webhooks').data.id;
    const standardKey = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const hmac = (key, ...parts) => parts.reduce((h, part) => h.update(part), createHmac('sha256', key));

    const newEvent = (occurredAt) => {
      const fileId = newId('file');
      const data = { file: { id: fileId, name: `${fileId}.bin`, size: 1024, type: 'application/octet-stream', folder_id: null, uploaded_by: account.userId, created_at: occurredAt } };
      return { id: newId('evt'), fileId, occurredAt, data };
    };
    const outboxRow = (e) => ({ id: e.id, account_id: account.accountId, event: 'file.uploaded', payload: JSON.stringify(e.data), occurred_at: e.occurredAt, relayed_at: null });
    const commit = async (events) => {
      await db.insertMany('outbox_events', events.map(outboxRow));
      void signal.publish(`${environment.env.REDIS_KEY_PREFIX}:outbox-committed`, 'bench').catch(() => undefined);
    };
    // What the service does per delivery (body and in-body signature at the relay, headers at the attempt), done here.
    const sendDirect = (e) => {
      const envelope = { event: 'file.uploaded', timestamp: e.occurredAt, webhook_id: webhookId, data: e.data };
      const body = Buffer.from(JSON.stringify({ ...envelope, signature: `sha256=${hmac(secret, JSON.stringify(envelope)).digest('hex')}` }));
      const timestamp = String(Math.floor(Date.now() / 1000));
      const headers = {
        'Content-Type': 'application/json',
        'Content-Length': String(body.length),
        'X-Service-Signature': `sha256=${hmac(secret, body).digest('hex')}`,
        'X-Service-Event': 'file.uploaded',
        'X-Service-Webhook-ID': webhookId,
        'X-Service-Delivery-ID': newId('dlv'),
        'User-Agent': 'Service-Webhook/1.0',
        'webhook-id': e.id,
        'webhook-timestamp': timestamp,
        'webhook-signature': `v1,${hmac(standardKey, `${e.id}.${timestamp}.`, body).digest('base64')}`,
      };
      // A request that fails to connect is sent again at once (the service would retry it, 5 s later).
      const post = (triesLeft) =>
        new Promise((resolve) => {
          const req = request(`http://127.0.0.1:${port}/hook`, { method: 'POST', agent, headers }, (res) => {
            res.resume();
            res.on('end', resolve);
            res.on('error', resolve);
          });
          req.on('error', () => resolve(triesLeft > 0 ? post(triesLeft - 1) : undefined));
          req.end(body);
        });
      return post(2);
    };
    const waitForAll = async (ids) => {
      const giveUpAt = Date.now() + timeBoxMs;
      while (ids.some((id) => !arrivals.has(id))) {
        if (Date.now() > giveUpAt) return false;
        await sleep(20);
      }
      return true;
    };
    const throughput = async (events, startedAt) => {
      const complete = await waitForAll(events.map((e) => e.fileId));
      const got = events.filter((e) => arrivals.has(e.fileId));
      const ms = (complete ? Math.max(...got.map((e) => arrivals.get(e.fileId))) : Date.now()) - startedAt;
      return { events: events.length, delivered: got.length, complete, ms, perSecond: got.length / (ms / 1000) };
    };
    /** Offers `pacedSize` events at `pacedRate`, 20 at a time; `offer` sends or commits them. */
    const paced = async (offer) => {
      const perTick = 20;
      const sent = [];
      const started = Date.now();
      for (let i = 0; i < pacedSize; i += perTick) {
        const due = started + (i / pacedRate) * 1000;
        if (due > Date.now()) await sleep(due - Date.now());
        const at = new Date().toISOString();
        const events = Array.from({ length: Math.min(perTick, pacedSize - i) }, () => newEvent(at));
        await offer(events);
        for (const e of events) sent.push({ fileId: e.fileId, dueMs: Date.parse(at) });
      }
      const complete = await waitForAll(sent.map((e) => e.fileId));
      const end = Date.now();
      const latencies = sent.map((e) => (arrivals.get(e.fileId) ?? end) - e.dueMs);
      return { events: pacedSize, complete, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
    };

    // CPU time of this process (sender and receiver for the direct send, receiver only for the service) and of the server.
    const ownCpuMs = () => {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1000;
    };
    const runs = [];
    for (let run = 0; run < options.runs; run++) {
      const directBatch = Array.from({ length: burstSize }, () => newEvent(new Date().toISOString()));
      const directCpuBefore = ownCpuMs();
      const directStarted = Date.now();
      await Promise.all(directBatch.map(sendDirect));
      const direct = await throughput(directBatch, directStarted);
      direct.benchCpuMs = ownCpuMs() - directCpuBefore;

      const serviceBatch = Array.from({ length: burstSize }, () => newEvent(new Date().toISOString()));
      const serviceCpuBefore = ownCpuMs();
      const serverCpuBefore = cpuMs(server.pid);
      await commit(serviceBatch);
      const service = await throughput(serviceBatch, Date.now());
      service.benchCpuMs = ownCpuMs() - serviceCpuBefore;
      service.serverCpuMsAtLastArrival = cpuMs(server.pid) - serverCpuBefore;
      // Attempts are logged just after they arrive: half a second more takes in the tail of the log writes.
      await sleep(500);
      service.serverCpuMs = cpuMs(server.pid) - serverCpuBefore;
      if (!service.complete) {
        runs.push({ direct, service });
        break;
      }

      const directPaced = await paced((events) => {
        for (const e of events) void sendDirect(e);
      });
      const servicePaced = await paced(commit);
      runs.push({ direct, service, directPaced, servicePaced });
      if (!servicePaced.complete) break;
    }

    const directRate = median(runs.map((r) => r.direct.perSecond));
    const serviceRate = median(runs.map((r) => r.service.perSecond));
    const unfinished = runs.some((r) => !r.service.complete || r.servicePaced?.complete === false);
    const ratio = serviceRate / directRate;
    // Per delivery: the server's CPU (relay, queue, attempt, log), and the direct sender's (this process during the
    // direct burst, less the receiver's share, measured as this process's CPU during the service burst).
    const serverCpuPerDelivery = median(runs.map((r) => r.service.serverCpuMs / Math.max(1, r.service.delivered)));
    const directCpuPerSend = median(runs.map((r) => (r.direct.benchCpuMs - r.service.benchCpuMs) / Math.max(1, r.direct.delivered)));
    const receiverCpuPerDelivery = median(runs.map((r) => r.service.benchCpuMs / Math.max(1, r.service.delivered)));
    const serviceP99 = median(runs.map((r) => r.servicePaced?.p99));
    const directP99 = median(runs.map((r) => r.directPaced?.p99));
    return {
      rows: [
        {
          metric: `deliveries/s vs direct send, ${burstSize.toLocaleString('en')} at once`,
          value: serviceRate,
          unit: '/s',
          detail: `${unfinished ? `time-boxed at ${timeBoxMs / 1000} s, not all delivered` : `${concurrency} in flight`}; CPU per delivery: server ${serverCpuPerDelivery.toFixed(3)} ms, direct sender ${directCpuPerSend.toFixed(3)} ms (receiver ${receiverCpuPerDelivery.toFixed(3)} ms)`,
          baseline: 'direct send',
          baselineValue: directRate,
          target: '>= 1.0x direct',
          pass: ratio >= 1,
        },
        {
          metric: `p99 due to receiver at ${pacedRate}/s, vs direct send`,
          value: serviceP99,
          unit: 'ms',
          detail: `p50 ${median(runs.map((r) => r.servicePaced?.p50))} ms`,
          baseline: 'direct send',
          baselineValue: directP99,
          target: 'p99 < 250 ms',
          pass: serviceP99 < 250,
        },
      ],
      raw: { concurrency, runs, serverCpuPerDelivery, directCpuPerSend, receiverCpuPerDelivery },
    };
  } finally {
    signal.disconnect();
    agent.destroy();
    await db.close();
    const closed = new Promise((r) => receiver.close(r));
    receiver.closeAllConnections();
    await closed;
  }
}
