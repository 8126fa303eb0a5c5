import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = (options?: { type: 'minor' | 'major' }) => void;

/**
 * V8's collector, whether or not the process was started with `node --expose-gc`: the flag set now exposes
 * `gc` in contexts created afterwards, so memory behaves the same however a user or a process manager starts
 * the service.
 */
const gc: Gc | undefined = (globalThis as { gc?: Gc }).gc ?? exposeGc();

function exposeGc(): Gc | undefined {
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as Gc;
  } catch {
    return undefined;
  }
}

/**
 * Runs a garbage collection now, for the few places where waiting for V8's own schedule costs measured
 * memory (see the callers).
 */
export function collectGarbage(type: 'minor' | 'major'): void {
  // `gc({ type: 'major' })` runs only a scavenge on Node 20's V8 (seen in perf_hooks' gc entries); `gc()` is a full collection.
  if (type === 'major') gc?.();
  else gc?.({ type });
}
