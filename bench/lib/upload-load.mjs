import { Agent, request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { percentile } from './measure.mjs';

/**
 * A small upload as a client sends it: one multipart body in memory, a unique file name per request
 * (a real client names its files; repeated names would measure the numbered-suffix search instead).
 */
export function multipartBody(content, fileName) {
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  return { body: Buffer.concat([head, content, Buffer.from(`\r\n--${boundary}--\r\n`)]), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * `concurrency` clients, each sending its next upload when the last was answered, over keep-alive
 * connections, until `count` uploads were sent or `seconds` have passed. `makeRequest(i)` answers
 * { body, contentType }. Answers uploads/s, latency p50/p99 (ms) and the failures (never averaged in).
 */
export async function runUploads(url, { headers = {}, concurrency = 32, count = Infinity, seconds = Infinity, makeRequest, check = () => true }) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const latencies = [];
  const failures = [];
  let next = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const client = async () => {
    while (next < count && performance.now() < deadline) {
      const i = next++;
      const { body, contentType } = makeRequest(i);
      const sent = performance.now();
      const res = await post(url, agent, body, { ...headers, 'content-type': contentType });
      latencies.push(performance.now() - sent);
      if (res.status !== 200 || !check(res.body)) failures.push(`${res.status} ${res.text.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  const ms = performance.now() - started;
  agent.destroy();
  return { uploads: latencies.length, ms, perSecond: (latencies.length / ms) * 1000, p50: percentile(latencies, 50), p99: percentile(latencies, 99), failures };
}

function post(url, agent, body, headers) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', agent, headers: { ...headers, 'content-length': body.length } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json = null;
        try {
          json = JSON.parse(text);
        } catch {
          // reported as text
        }
        resolve({ status: res.statusCode, text, body: json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The server's database statement and transaction counters (GET /metrics). */
export async function databaseCounters(baseUrl) {
  const text = await fetch(`${baseUrl}/metrics`).then((r) => r.text());
  const read = (name) => Number(new RegExp(`^${name} (\\d+(?:\\.\\d+)?)`, 'm').exec(text)?.[1] ?? NaN);
  return { statements: read('db_statements_total'), transactions: read('db_transactions_total') };
}
