import { mkdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { writeRandomFile } from '../lib/data.mjs';
import { download, expectOk, uploadMultipart } from '../lib/http.mjs';
import { cpuMs, GiB, MiB, mbPerSecond, median, NotAvailable, rss, waitForIdleServer } from '../lib/measure.mjs';
import { ROOT, startNode } from '../lib/processes.mjs';

/**
 * Scenario 2: the large file of scenario 1 read back through its signed download_url, whole and as a
 * Range of the middle half, side by side with express.static serving the same bytes from disk.
 * Also time to first byte (a small file, so the figure is the request's fixed cost, not the disk's)
 * and how far the server's RSS rises above its resting size during the whole-file download.
 * Run alone (`--only download`), it uploads the file itself first. It starts once the server is idle (the
 * thousands of small uploads of scenario 1 leave scan and thumbnail jobs behind, which took a third of the
 * download's speed on PostgreSQL), and warms both first-byte paths up before timing them, so the figure is
 * a warm server's, not the first requests' compilation.
 */
export async function downloadScenario(ctx) {
  const { server, options } = ctx;
  if (!ctx.shared.uploaded?.downloadUrl) await uploadOwnFile(ctx);
  const uploaded = ctx.shared.uploaded;
  if (!uploaded?.downloadUrl) throw new NotAvailable('needs the file uploaded by the upload scenario (with its download_url)');
  const source = ctx.shared.source;
  const small = await uploadSmallFile(ctx);
  const staticServer = await startNode(resolve(ROOT, 'bench/baselines/static-server.mjs'), [dirname(source.path)], {}, { readyText: 'LISTENING' });
  const staticUrl = `http://127.0.0.1:${/LISTENING (\d+)/.exec(staticServer.output())[1]}/${basename(source.path)}`;
  const serviceUrl = uploaded.downloadUrl.replace(/^https?:\/\/[^/]+/, server.url);
  const size = uploaded.size;
  const start = Math.floor(size / 4);
  const end = start + Math.floor(size / 2) - 1;
  const range = { range: `bytes=${start}-${end}` };
  const staticSmallUrl = `${staticUrl.slice(0, staticUrl.lastIndexOf('/'))}/${basename(small.path)}`;
  const runs = { service: [], static: [], serviceRange: [], staticRange: [], serviceFirstByte: [], staticFirstByte: [] };
  try {
    await waitForIdleServer(server.pid, { baseUrl: server.url, log: ctx.log });
    for (let i = 0; i < 200; i++) {
      check(await download(small.serviceUrl), 200, small.size, 'download_url of a small file (warm-up)');
      check(await download(staticSmallUrl), 200, small.size, 'express.static of a small file (warm-up)');
    }
    const contestants = {
      service: async () => {
        const restingMiB = rss.currentMiB(server.pid);
        rss.reset(server.pid);
        const cpuBefore = cpuMs(server.pid);
        const res = await download(serviceUrl);
        if (res.status === 404) throw new NotAvailable('GET download_url answered 404');
        check(res, 200, size, 'download_url');
        const peakRssMiB = rss.peakMiB(server.pid);
        return { mbps: mbPerSecond(res.bytes, res.ms), ms: res.ms, ttfbMs: res.ttfbMs, peakRssMiB, rssGrowthMiB: peakRssMiB - restingMiB, cpuMsPerGiB: ((cpuMs(server.pid) - cpuBefore) * GiB) / size };
      },
      serviceFirstByte: async () => {
        const res = await download(small.serviceUrl);
        check(res, 200, small.size, 'download_url of a small file');
        return { ttfbMs: res.ttfbMs };
      },
      staticFirstByte: async () => {
        const res = await download(staticSmallUrl);
        check(res, 200, small.size, 'express.static of a small file');
        return { ttfbMs: res.ttfbMs };
      },
      static: async () => {
        const cpuBefore = cpuMs(staticServer.pid);
        const res = await download(staticUrl);
        check(res, 200, size, 'express.static');
        return { mbps: mbPerSecond(res.bytes, res.ms), ms: res.ms, ttfbMs: res.ttfbMs, cpuMsPerGiB: ((cpuMs(staticServer.pid) - cpuBefore) * GiB) / size };
      },
      serviceRange: async () => {
        const res = await download(serviceUrl, range);
        check(res, 206, end - start + 1, 'download_url with Range');
        return { mbps: mbPerSecond(res.bytes, res.ms), ms: res.ms };
      },
      staticRange: async () => {
        const res = await download(staticUrl, range);
        check(res, 206, end - start + 1, 'express.static with Range');
        return { mbps: mbPerSecond(res.bytes, res.ms), ms: res.ms };
      },
    };
    const names = Object.keys(contestants);
    for (let run = 0; run < options.runs; run++) {
      for (let i = 0; i < names.length; i++) {
        const name = names[(i + run) % names.length];
        // First-byte figures are noisy at a few ms: fifty requests per run, each its own sample.
        const repeat = name.endsWith('FirstByte') ? 50 : 1;
        for (let r = 0; r < repeat; r++) runs[name].push(await contestants[name]());
      }
    }
  } finally {
    await staticServer.stop();
  }
  const m = (name, key = 'mbps') => median(runs[name].map((r) => r[key]));
  return {
    rows: [
      { metric: 'download, whole file', value: m('service'), unit: 'MB/s', baseline: 'express.static', baselineValue: m('static'), target: '>= 0.9x', pass: m('service') / m('static') >= 0.9 },
      { metric: 'download, Range (middle half)', value: m('serviceRange'), unit: 'MB/s', baseline: 'express.static', baselineValue: m('staticRange'), target: '>= 0.9x', pass: m('serviceRange') / m('staticRange') >= 0.9 },
      {
        metric: 'download, time to first byte (small file)',
        value: m('serviceFirstByte', 'ttfbMs'),
        unit: 'ms',
        baseline: 'express.static',
        baselineValue: m('staticFirstByte', 'ttfbMs'),
        detail: `whole file: ${m('service', 'ttfbMs').toFixed(1)} ms vs ${m('static', 'ttfbMs').toFixed(1)} ms`,
        target: '<= 2x',
        pass: m('serviceFirstByte', 'ttfbMs') <= 2 * m('staticFirstByte', 'ttfbMs'),
      },
      {
        metric: 'download, server CPU per GiB (whole file)',
        value: m('service', 'cpuMsPerGiB'),
        unit: 'ms',
        baseline: 'express.static',
        baselineValue: m('static', 'cpuMsPerGiB'),
        detail: 'CPU time barely depends on the load of other processes',
      },
      { metric: 'peak server RSS, download', value: m('service', 'peakRssMiB'), unit: 'MiB', detail: `+${m('service', 'rssGrowthMiB').toFixed(1)} MiB over resting` },
    ],
    raw: { size, range: range.range, runs },
  };
}

/** Alone, the scenario uploads its large file itself (what scenario 1 otherwise leaves in ctx.shared). */
async function uploadOwnFile(ctx) {
  const { environment, server, account, options } = ctx;
  const size = options.quick ? 256 * MiB : 1 * GiB;
  const dir = join(environment.workDir, 'bench-data');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `bench-${size / MiB}MiB.bin`);
  const md5 = await writeRandomFile(path, size);
  const body = expectOk(await uploadMultipart(`${server.url}/v1/files/upload`, path, size, { headers: account.auth, fileName: 'bench-large.bin' }), 'POST /v1/files/upload');
  ctx.shared.source = { path, size, md5 };
  ctx.shared.uploaded = { id: body.data.id, downloadUrl: body.data.download_url, size, md5 };
}

/** A 1 KiB file, uploaded and beside the large one on disk, for the first-byte comparison. */
async function uploadSmallFile(ctx) {
  const { server, account } = ctx;
  const size = 1024;
  const path = join(dirname(ctx.shared.source.path), 'bench-first-byte.bin');
  await writeRandomFile(path, size);
  const body = expectOk(await uploadMultipart(`${server.url}/v1/files/upload`, path, size, { headers: account.auth, fileName: 'first-byte.bin' }), 'POST /v1/files/upload');
  return { path, size, serviceUrl: body.data.download_url.replace(/^https?:\/\/[^/]+/, server.url) };
}

function check(res, status, bytes, what) {
  if (res.status !== status || res.bytes !== bytes) throw new Error(`${what} answered ${res.status} with ${res.bytes} bytes, expected ${status} with ${bytes}`);
}
