import { createReadStream } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { NotAvailable } from './measure.mjs';

/** A JSON request; answers { status, body, headers }. A 404 for an unknown route is NotAvailable. */
export function requestJson(method, url, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = httpRequest(
      url,
      {
        method,
        agent: false,
        headers: { accept: 'application/json', ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}), ...headers },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json = null;
          try {
            json = JSON.parse(text);
          } catch {
            json = null;
          }
          resolve({ status: res.statusCode, headers: res.headers, body: json ?? text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Throws NotAvailable when the service answered "no such route", otherwise an error for any other non-2xx. */
export function expectOk(response, what) {
  if (response.status >= 200 && response.status < 300) return response.body;
  const code = response.body?.error?.code;
  if ((response.status === 404 && code === 'not_found' && /route|cannot|no such/i.test(response.body?.error?.message ?? '')) || response.status === 405) {
    throw new NotAvailable(`${what}: route not in this build (${response.status})`);
  }
  if (response.status === 404 && !code) throw new NotAvailable(`${what}: route not in this build (404)`);
  throw new Error(`${what} answered ${response.status}: ${typeof response.body === 'string' ? response.body.slice(0, 300) : JSON.stringify(response.body).slice(0, 300)}`);
}

/**
 * POSTs a file from disk as multipart/form-data, streamed: preamble, the file's bytes straight from
 * a read stream, epilogue; with an exact Content-Length. Nothing is buffered beyond one chunk.
 * Answers { status, body, ms } where ms runs from the first byte sent to the last byte of the answer.
 */
export function uploadMultipart(url, filePath, size, { headers = {}, fileName = 'upload.bin', fieldName = 'file' } = {}) {
  const boundary = `----bench${randomBytes(12).toString('hex')}`;
  const preamble = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${fieldName}"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const epilogue = Buffer.from(`\r\n--${boundary}--\r\n`);
  return streamBody(url, 'POST', filePath, {
    headers: {
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': preamble.length + size + epilogue.length,
      ...headers,
    },
    preamble,
    epilogue,
  });
}

/** Streams a file (or the `range` {start, end} of it, inclusive) as the raw request body (the pipe baseline and tus PATCH). */
export function uploadRaw(url, method, filePath, size, headers = {}, range = undefined) {
  return streamBody(url, method, filePath, { headers: { 'content-length': size, ...headers }, range });
}

function streamBody(url, method, filePath, { headers, preamble, epilogue, range }) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest(url, { method, agent: false, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const ms = performance.now() - started;
        const text = Buffer.concat(chunks).toString('utf8');
        let body = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode, headers: res.headers, body, ms });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (preamble) req.write(preamble);
    const source = createReadStream(filePath, { highWaterMark: 1024 * 1024, ...range });
    source.on('error', reject);
    source.pipe(req, { end: false });
    source.on('end', () => req.end(epilogue));
  });
}

/**
 * Reads a URL to the end and throws the bytes away (counting them). Answers { status, bytes, ms, ttfbMs }:
 * ttfbMs runs to the first byte of the body (to the headers when there is no body).
 */
export function download(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest(url, { method: 'GET', agent: false, headers }, (res) => {
      let bytes = 0;
      let ttfbMs = null;
      res.on('data', (c) => {
        if (ttfbMs === null) ttfbMs = performance.now() - started;
        bytes += c.length;
      });
      res.on('end', () => {
        const ms = performance.now() - started;
        resolve({ status: res.statusCode, headers: res.headers, bytes, ms, ttfbMs: ttfbMs ?? ms });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
