import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeRandomFile } from '../lib/data.mjs';
import { requestJson, uploadRaw } from '../lib/http.mjs';
import { GiB, MiB, mbPerSecond, median, rss } from '../lib/measure.mjs';
import { ROOT, startNode } from '../lib/processes.mjs';

const CHUNK = 16 * MiB;

/**
 * Scenario 6: one large file through /v1/uploads (tus) in 16 MiB PATCHes, against the same bytes
 * and chunks to bare @tus/server + @tus/file-store (which neither hashes nor commits a file). Ours
 * hashes every byte and commits the file; its MD5 is checked. Peak server RSS as in scenario 1, for this
 * size and for 64 MiB: it must not grow with the size.
 */
export async function tusScenario(ctx) {
  const { environment, server, account, options } = ctx;
  const size = options.quick ? 256 * MiB : 1 * GiB;
  const fullSize = size;
  /** The same upload, small: the peak RSS must not grow with the size. */
  const smallSize = 64 * MiB;
  const dataDir = join(environment.workDir, 'bench-data');
  const tusDir = join(environment.workDir, 'tus-chunks-out');
  for (const dir of [dataDir, tusDir]) mkdirSync(dir, { recursive: true });
  const source = ctx.shared.source?.size === size ? ctx.shared.source : null;
  const path = source?.path ?? join(dataDir, `bench-tus-${size / MiB}MiB.bin`);
  const md5 = source?.md5 ?? (await writeRandomFile(path, size));
  const fullPath = path;
  const smallPath = join(dataDir, `bench-tus-${smallSize / MiB}MiB.bin`);
  const smallMd5 = await writeRandomFile(smallPath, smallSize);

  const bare = await startNode(resolve(ROOT, 'bench/baselines/tus-server.mjs'), [tusDir], {}, { readyText: 'LISTENING' });
  const bareUrl = `http://127.0.0.1:${Number(/LISTENING (\d+)/.exec(bare.output())[1])}/files`;

  /** Creates an upload at `endpoint` and PATCHes the file in 16 MiB chunks; answers the time and the last answer. */
  const send = async (endpoint, headers, { size = fullSize, path = fullPath } = {}) => {
    const started = performance.now();
    const created = await requestJson('POST', endpoint, { headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-length': String(size) } });
    if (created.status !== 201) throw new Error(`tus create at ${endpoint} answered ${created.status}: ${JSON.stringify(created.body)}`);
    const location = new URL(created.headers.location, endpoint).toString();
    let last;
    for (let offset = 0; offset < size; offset += CHUNK) {
      const length = Math.min(CHUNK, size - offset);
      last = await uploadRaw(location, 'PATCH', path, length, { ...headers, 'tus-resumable': '1.0.0', 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, { start: offset, end: offset + length - 1 });
      if (last.status !== 204) throw new Error(`tus PATCH at ${offset} answered ${last.status}: ${JSON.stringify(last.body)}`);
    }
    return { ms: performance.now() - started, last };
  };

  const runs = { service: [], small: [], bare: [] };
  try {
    /** One upload through our /v1/uploads, its MD5 checked; answers its rate and the server's peak RSS. */
    const throughService = async (file) => {
      rss.reset(server.pid);
      const { ms, last } = await send(
        `${server.url}/v1/uploads`,
        { ...account.auth, 'upload-metadata': `filename ${Buffer.from('bench-tus.bin').toString('base64')}` },
        file,
      );
      const peak = rss.peakMiB(server.pid);
      const fileId = last.headers['x-file-id'];
      const stored = await requestJson('GET', `${server.url}/v1/files/${fileId}`, { headers: account.auth });
      if (stored.body?.data?.md5_hash !== file.md5) throw new Error(`tus upload stored md5 ${stored.body?.data?.md5_hash}, expected ${file.md5}`);
      await requestJson('DELETE', `${server.url}/v1/files/${fileId}?permanent=true`, { headers: account.auth }).catch(() => undefined);
      return { mbps: mbPerSecond(file.size, ms), ms, peakRssMiB: peak };
    };
    const contestants = {
      service: () => throughService({ size: fullSize, path: fullPath, md5 }),
      small: () => throughService({ size: smallSize, path: smallPath, md5: smallMd5 }),
      bare: async () => {
        rss.reset(bare.pid);
        const { ms } = await send(bareUrl, {});
        const peak = rss.peakMiB(bare.pid);
        for (const name of readdirSync(tusDir)) rmSync(join(tusDir, name), { force: true });
        return { mbps: mbPerSecond(size, ms), ms, peakRssMiB: peak };
      },
    };
    const names = Object.keys(contestants);
    for (let run = 0; run < options.runs; run++) {
      for (const name of run % 2 === 0 ? names : [...names].reverse()) runs[name].push(await contestants[name]());
    }
    const m = (list, key) => median(list.map((r) => r[key]));
    const service = m(runs.service, 'mbps');
    const bareRate = m(runs.bare, 'mbps');
    const peak = m(runs.service, 'peakRssMiB');
    const smallPeak = m(runs.small, 'peakRssMiB');
    const label = options.quick ? '256 MiB' : '1 GiB';
    return {
      rows: [
        { metric: `tus upload ${label}, 16 MiB chunks`, value: service, unit: 'MB/s', baseline: '@tus/server + file-store', baselineValue: bareRate, target: '>= 0.9x', pass: service / bareRate >= 0.9 },
        { metric: `peak server RSS, tus ${label}`, value: peak, unit: 'MiB', target: '< 150 MiB', pass: peak < 150, note: `bare @tus/server ${m(runs.bare, 'peakRssMiB').toFixed(0)} MiB` },
        { metric: `peak RSS, tus ${label} vs 64 MiB`, value: peak - smallPeak, unit: 'MiB', target: 'flat: < 10 MiB more', pass: peak - smallPeak < 10, note: `64 MiB: ${smallPeak.toFixed(0)} MiB` },
      ],
      raw: { size, runs },
    };
  } finally {
    await bare.stop();
  }
}
