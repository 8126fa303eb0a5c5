import autocannon from 'autocannon';

/**
 * One autocannon run. Answers requests/s (mean over the run), latency p50/p99 in ms, and the count of
 * non-2xx answers and errors (a run with any is reported, never silently averaged in).
 */
export function load(url, { headers = {}, connections = 10, duration = 5, overallRate, signal } = {}) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      { url, headers, connections, duration, overallRate, pipelining: 1, timeout: 30 },
      (error, result) => {
        if (error) return reject(error);
        resolve({
          rps: result.requests.average,
          requests: result.requests.total,
          p50: result.latency.p50,
          p90: result.latency.p90,
          p99: result.latency.p99,
          max: result.latency.max,
          non2xx: result.non2xx,
          /** { "<status>": { count } } for every status answered. */
          statusCodes: result.statusCodeStats,
          errors: result.errors + result.timeouts,
          seconds: result.duration,
        });
      },
    );
    if (signal) signal.addEventListener('abort', () => instance.stop(), { once: true });
  });
}
