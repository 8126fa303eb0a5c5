import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeRandomFile } from '../lib/data.mjs';
import { createEnvironment, START_PROD_FLAGS } from '../lib/environment.mjs';
import { expectOk, requestJson, uploadMultipart } from '../lib/http.mjs';
import { MiB, rss, sleep } from '../lib/measure.mjs';

const CONCURRENT = 20;

/**
 * Scenario 7: memory under upload load, independent of how the process is started. The server runs twice,
 * as `npm run start:prod` starts it (with V8 flags) and as plain `node dist/main.js`. Each time: RSS at rest
 * after a warm-up upload, then the peak RSS growth over rest for one large upload, and for 20 concurrent
 * uploads; what matters to an operator is the growth, and how much each further concurrent upload adds.
 */
export async function memoryScenario(ctx) {
  const { options } = ctx;
  const single = options.quick ? 256 * MiB : 1024 * MiB;
  const each = options.quick ? 64 * MiB : 256 * MiB;
  const rows = [];
  const raw = {};
  for (const [started, nodeFlags] of [
    ['plain node', []],
    ['start:prod flags', START_PROD_FLAGS],
  ]) {
    const environment = await createEnvironment(options.db, 'memory', { ...options.serverEnv });
    try {
      const dataDir = join(environment.workDir, 'bench-data');
      mkdirSync(dataDir, { recursive: true });
      const singlePath = join(dataDir, 'single.bin');
      const eachPath = join(dataDir, 'each.bin');
      const warmPath = join(dataDir, 'warm.bin');
      await writeRandomFile(singlePath, single);
      await writeRandomFile(eachPath, each);
      await writeRandomFile(warmPath, 10 * MiB);
      const server = await environment.startServer({}, { nodeFlags });
      const account = await environment.createAccount('bench memory');
      const url = `${server.url}/v1/files/upload`;
      const uploadOne = async (path, size, name) => {
        const body = expectOk(await uploadMultipart(url, path, size, { headers: account.auth, fileName: name }), 'POST /v1/files/upload');
        if (body.data?.size !== size) throw new Error(`upload answered size ${body.data?.size}, expected ${size}`);
        return body.data.id;
      };
      const remove = (id) => requestJson('DELETE', `${server.url}/v1/files/${id}?permanent=true`, { headers: account.auth });

      await remove(await uploadOne(warmPath, 10 * MiB, 'warm.bin'));
      await sleep(2000);
      const rest = rss.currentMiB(server.pid);

      rss.reset(server.pid);
      const singleId = await uploadOne(singlePath, single, 'single.bin');
      const singleGrowth = rss.peakMiB(server.pid) - rest;
      await remove(singleId);
      await sleep(2000);

      const restBeforeMany = rss.currentMiB(server.pid);
      rss.reset(server.pid);
      const ids = await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => uploadOne(eachPath, each, `concurrent-${i}.bin`)));
      const manyGrowth = rss.peakMiB(server.pid) - restBeforeMany;
      for (const id of ids) await remove(id);
      const perExtra = (manyGrowth - singleGrowth) / (CONCURRENT - 1);

      raw[started] = { nodeFlags, restMiB: rest, singleGrowthMiB: singleGrowth, restBeforeManyMiB: restBeforeMany, manyGrowthMiB: manyGrowth, perExtraMiB: perExtra };
      rows.push(
        { metric: `RSS at rest (${started})`, value: rest, unit: 'MiB' },
        { metric: `RSS growth, one ${single / MiB} MiB upload (${started})`, value: singleGrowth, unit: 'MiB', target: '< 30 MiB', pass: singleGrowth < 30 },
        {
          metric: `RSS growth per extra upload, ${CONCURRENT} x ${each / MiB} MiB at once (${started})`,
          value: perExtra,
          unit: 'MiB',
          detail: `${manyGrowth.toFixed(0)} MiB in all`,
          target: '< 5 MiB',
          pass: perExtra < 5,
        },
      );
    } finally {
      await environment.dispose();
    }
  }
  return { rows, raw };
}
