import { makeProcessTempDir, removeOrphanedProcessTempDirs } from '../../../infra/instances/process-temp-dirs.js';

/**
 * Each thumbnail job copies the blob into a private dir under os.tmpdir(), `fss-thumb-<pid>-XXXXXX`, and removes it
 * when done; the next server start removes those a dead process left (process-temp-dirs.ts).
 */
const PREFIX = 'fss-thumb';

export function makeThumbnailWorkdir(): Promise<string> {
  return makeProcessTempDir(PREFIX);
}

/** Removes the work dirs of processes that are no longer running; returns how many. */
export function removeOrphanedThumbnailWorkdirs(): Promise<number> {
  return removeOrphanedProcessTempDirs(PREFIX);
}
