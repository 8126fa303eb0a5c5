import { createEnvironment } from '../lib/environment.mjs';
import { median } from '../lib/measure.mjs';

const PARALLEL = 20;

/**
 * Scenario 6: start-up of the command line. Each command boots only the database and its own module, so
 * its wall time is the cost an operator (or a script creating accounts) pays per call. Runs against a
 * migrated database with no server, one command at a time, then 20 at once on the same database.
 */
export async function cliScenario(ctx) {
  const { options } = ctx;
  const environment = await createEnvironment(options.db, 'cli');
  try {
    await environment.cli(['db', 'migrate']);
    const owner = await environment.createAccount('bench cli owner');
    const commands = {
      'accounts create': () => ['accounts', 'create', '--name', 'bench cli', '--plan', 'free'],
      'keys create': () => ['keys', 'create', '--account', owner.accountId, '--scopes', 'read'],
      'trash purge': () => ['trash', 'purge'],
    };
    const runs = Math.max(options.quick ? 3 : 5, options.runs);
    const timings = {};
    for (const [name, args] of Object.entries(commands)) {
      timings[name] = [];
      for (let run = 0; run < runs; run++) timings[name].push((await environment.cli(args())).ms);
    }
    const started = performance.now();
    await Promise.all(Array.from({ length: PARALLEL }, () => environment.cli(commands['accounts create']())));
    const parallelMs = performance.now() - started;
    return {
      rows: [
        ...Object.entries(timings).map(([name, ms]) => ({ metric: `cli ${name}, wall time`, value: median(ms), unit: 'ms', target: '< 1000 ms', pass: median(ms) < 1000 })),
        {
          metric: `cli accounts create, ${PARALLEL} at once`,
          value: parallelMs,
          unit: 'ms',
          detail: `${(parallelMs / PARALLEL).toFixed(0)} ms a command`,
          target: '< 30000 ms',
          pass: parallelMs < 30_000,
        },
      ],
      raw: { runs, timings, parallel: PARALLEL, parallelMs },
    };
  } finally {
    await environment.dispose();
  }
}
