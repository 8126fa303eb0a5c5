import { collectGarbage } from '../../../garbage-collection.js';

/** A minor collection after this many bytes of upload traffic (all uploads together). */
const COLLECT_EVERY = 4 * 1024 * 1024;

let sinceCollection = 0;

/**
 * Frees the socket buffers of chunks already passed on. Each chunk lives in its own 64 KiB buffer
 * outside the JS heap, released only when V8 collects the young generation; the little JS garbage a
 * chunk makes lets that happen only every ~12 MiB (measured), so an upload held that much dead memory,
 * about what a hashing thread costs. A minor collection every 4 MiB keeps it near 4 MiB, for well
 * under a millisecond each (more often measured no lower peak but a slower upload, the hash being
 * on the event loop with two cores).
 */
export function releaseSpentChunks(bytes: number): void {
  sinceCollection += bytes;
  if (sinceCollection < COLLECT_EVERY) return;
  sinceCollection = 0;
  collectGarbage('minor');
}
