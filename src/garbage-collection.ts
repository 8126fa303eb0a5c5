import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = (options: { type: 'minor' | 'major' }) => void;
let gc: Gc | null | undefined;

/**
 * Runs a garbage collection now, for the few places where waiting for V8's own schedule costs
 * measured memory (see the callers). `gc` is obtained here rather than from `--expose-gc` on every
 * command line that starts the service; where that is refused, this does nothing.
 */
export function collectGarbage(type: 'minor' | 'major'): void {
  gc ??= exposeGc();
  gc?.({ type });
}

function exposeGc(): Gc | null {
  try {
    setFlagsFromString('--expose-gc');
    // Only a context created while the flag is set gets `gc`; the flag is turned off again after.
    const exposed = runInNewContext('gc') as Gc | undefined;
    setFlagsFromString('--no-expose-gc');
    return typeof exposed === 'function' ? exposed : null;
  } catch {
    return null;
  }
}
