/**
 * Rate-limit windows are aligned to wall-clock minutes. A test that sends a burst waits for a fresh
 * window when the current one has too little time left, so the burst cannot straddle two windows.
 */
export async function startOfFreshRateWindow(neededMs = 15_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < neededMs) await sleep(left + 50);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` every 50 ms until it gives something other than undefined, null or false. */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}
