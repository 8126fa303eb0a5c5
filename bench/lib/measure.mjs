import { readFileSync, writeFileSync } from 'node:fs';

/** Median of numbers (NaN for none). Every reported figure is a median of several runs. */
export function median(values) {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Nearest-rank percentile (p in 0..100) of raw samples. */
export function percentile(values, p) {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

/**
 * Peak resident memory of a process, measured around one scenario: writing 5 to clear_refs resets
 * VmHWM (the high-water mark of RSS) to the current RSS, so the mark read afterwards is the peak
 * reached during the scenario only. Linux only.
 */
export const rss = {
  reset(pid) {
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
      return true;
    } catch {
      return false;
    }
  },
  /** VmHWM in MiB. */
  peakMiB(pid) {
    return statusField(pid, 'VmHWM');
  },
  currentMiB(pid) {
    return statusField(pid, 'VmRSS');
  },
};

function statusField(pid, field) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return match ? Number(match[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * CPU time (user + system) a process has used so far, in ms, from /proc/<pid>/stat. Unlike wall time it
 * barely moves when other processes load the machine, so it compares two servers fairly. Linux only.
 */
export function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    // After the command: state is field 3, utime 14 and stime 15 (1-based), in clock ticks (100 per second).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/**
 * Waits until the server has no background work left and spends under 5% of a core for a whole second, so
 * that work left over from an earlier scenario (media jobs and events of thousands of uploads) is not counted
 * against this one. The queues are read from /metrics as an operator sees them: a second of low CPU alone can
 * fall between two batches of that work. Gives up after `timeoutMs` and says so; the figures then carry that work.
 */
export async function waitForIdleServer(pid, { baseUrl, timeoutMs = 300_000, log = () => {} } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pending = baseUrl ? await backgroundWork(baseUrl) : 0;
    const before = cpuMs(pid);
    await sleep(1_000);
    const busyMs = cpuMs(pid) - before;
    if (pending === 0 && !(busyMs >= 50)) return true;
    if (Date.now() > deadline) {
      log(`server still busy (${pending} background jobs or events, ${busyMs} ms of CPU a second) after ${timeoutMs / 1000} s; measuring anyway`);
      return false;
    }
  }
}

/**
 * Jobs waiting or running in the queues that uploads and events feed (scans, thumbnails, webhook deliveries
 * and replays), plus events the relay has not passed on, from the server's /metrics. Delayed jobs are left
 * out: they include the scans queue's own schedule, which is always there.
 */
export async function backgroundWork(baseUrl) {
  const text = await fetch(`${baseUrl}/metrics`).then((r) => r.text());
  let pending = 0;
  for (const [, count] of text.matchAll(/^queue_jobs\{[^}]*state="(?:waiting|active|prioritized)"[^}]*\} (\d+)/gm)) pending += Number(count);
  for (const [, count] of text.matchAll(/^webhook_outbox_backlog\{[^}]*\} (\d+)/gm)) pending += Number(count);
  return pending;
}

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

/** Decimal megabytes per second, as disks and networks are quoted. */
export function mbPerSecond(bytes, ms) {
  return bytes / 1e6 / (ms / 1000);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves when check() returns truthy, or rejects after timeoutMs. */
export async function waitFor(check, { timeoutMs = 30_000, intervalMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** A route the scenario needs is not in this build (404/405 from the service). */
export class NotAvailable extends Error {
  constructor(message) {
    super(message);
    this.name = 'NotAvailable';
  }
}
