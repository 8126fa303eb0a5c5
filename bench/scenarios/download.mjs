import { basename, dirname, resolve } from 'node:path';
import { download } from '../lib/http.mjs';
import { mbPerSecond, median, NotAvailable, rss } from '../lib/measure.mjs';
import { ROOT, startNode } from '../lib/processes.mjs';

/**
 * Scenario 2: the large file of scenario 1 read back through its signed download_url, whole and as a
 * Range of the middle half, side by side with express.static serving the same bytes from disk.
 */
export async function downloadScenario(ctx) {
  const { server, options } = ctx;
  const uploaded = ctx.shared.uploaded;
  if (!uploaded?.downloadUrl) throw new NotAvailable('needs the file uploaded by the upload scenario (with its download_url)');
  const source = ctx.shared.source;
  const staticServer = await startNode(resolve(ROOT, 'bench/baselines/static-server.mjs'), [dirname(source.path)], {}, { readyText: 'LISTENING' });
  const staticUrl = `http://127.0.0.1:${/LISTENING (\d+)/.exec(staticServer.output())[1]}/${basename(source.path)}`;
  const serviceUrl = uploaded.downloadUrl.replace(/^https?:\/\/[^/]+/, server.url);
  const size = uploaded.size;
  const start = Math.floor(size / 4);
  const end = start + Math.floor(size / 2) - 1;
  const range = { range: `bytes=${start}-${end}` };
  const runs = { service: [], static: [], serviceRange: [], staticRange: [] };
  try {
    const contestants = {
      service: async () => {
        rss.reset(server.pid);
        const res = await download(serviceUrl);
        if (res.status === 404) throw new NotAvailable('GET download_url answered 404');
        check(res, 200, size, 'download_url');
        return { mbps: mbPerSecond(res.bytes, res.ms), ms: res.ms, peakRssMiB: rss.peakMiB(server.pid) };
      },
      static: async () => {
        const res = await download(staticUrl);
        check(res, 200, size, 'express.static');
        return { mbps: mbPerSecond(res.bytes, res.ms), ms: res.ms };
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
        runs[name].push(await contestants[name]());
      }
    }
  } finally {
    await staticServer.stop();
  }
  const m = (name, key = 'mbps') => median(runs[name].map((r) => r[key]));
  return {
    rows: [
      { metric: 'download, whole file', value: m('service'), unit: 'MB/s', baseline: 'express.static', baselineValue: m('static'), target: '>= 0.8x', pass: m('service') / m('static') >= 0.8 },
      { metric: 'download, Range (middle half)', value: m('serviceRange'), unit: 'MB/s', baseline: 'express.static', baselineValue: m('staticRange'), target: '>= 0.8x', pass: m('serviceRange') / m('staticRange') >= 0.8 },
      { metric: 'peak server RSS, download', value: m('service', 'peakRssMiB'), unit: 'MiB' },
    ],
    raw: { size, range: range.range, runs },
  };
}

function check(res, status, bytes, what) {
  if (res.status !== status || res.bytes !== bytes) throw new Error(`${what} answered ${res.status} with ${res.bytes} bytes, expected ${status} with ${bytes}`);
}
