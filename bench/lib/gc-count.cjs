// Preloaded into the server by `node bench/cpu-per-request.mjs --gc` (`--require`): counts the server's garbage
// collections between two SIGUSR2 signals and writes {minor, major, ms} to GC_COUNT_FILE at the second.
const { PerformanceObserver, constants } = require('node:perf_hooks');
const { writeFileSync } = require('node:fs');

let counting = false;
let counts = { minor: 0, major: 0, ms: 0 };
new PerformanceObserver((list) => {
  if (!counting) return;
  for (const entry of list.getEntries()) {
    if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) counts.minor++;
    else counts.major++;
    counts.ms += entry.duration;
  }
}).observe({ entryTypes: ['gc'] });

process.on('SIGUSR2', () => {
  counting = !counting;
  if (counting) counts = { minor: 0, major: 0, ms: 0 };
  // Observer entries arrive asynchronously: the last ones of the run are taken a moment later.
  else setTimeout(() => writeFileSync(process.env.GC_COUNT_FILE, JSON.stringify(counts)), 500);
});
