type Gc = (options: { type: 'minor' | 'major' }) => void;

/**
 * Runs a garbage collection now, for the few places where waiting for V8's own schedule costs
 * measured memory (see the callers). Needs `node --expose-gc`, which every command that starts the
 * service passes (`npm start`, `npm run start:prod`, the Dockerfile); without it this does nothing.
 */
export function collectGarbage(type: 'minor' | 'major'): void {
  (globalThis as { gc?: Gc }).gc?.({ type });
}
