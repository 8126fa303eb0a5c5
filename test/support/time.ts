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
