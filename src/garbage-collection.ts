import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = () => void;

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
 * Runs a full garbage collection now, for the one place where waiting for V8's own schedule costs measured
 * memory (the start-up garbage, see main.ts).
 */
export function collectGarbage(): void {
  if (!gc) return;
  // Compacting moves what survives onto as few pages as possible, so the pages start-up left half empty are
  // given back (V8 compacts only pages it judges fragmented enough, which after start-up leaves about 10 MiB).
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    gc();
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
}
