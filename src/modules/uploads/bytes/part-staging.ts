import { makeProcessTempDir, removeOrphanedProcessTempDirs } from '../../../infra/instances/process-temp-dirs.js';

/** On S3, where a process stages the parts of PATCHes on disk before each goes to the bucket; named after the process. */
const STAGING_DIR_PREFIX = 'fss-tus-s3-parts';

export function makePartStagingDir(): Promise<string> {
  return makeProcessTempDir(STAGING_DIR_PREFIX);
}

/** Removes the staging dirs of processes that are no longer running (killed mid-PATCH); returns how many. */
export function removeOrphanedPartStagingDirs(): Promise<number> {
  return removeOrphanedProcessTempDirs(STAGING_DIR_PREFIX);
}
