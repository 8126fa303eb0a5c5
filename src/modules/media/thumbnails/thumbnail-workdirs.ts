import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Each thumbnail job copies the blob into a private dir under os.tmpdir(), named after the process
 * (`fss-thumb-<pid>-XXXXXX`), and removes it when done. A process that dies mid-job (SIGKILL, OOM, power)
 * cannot remove its dirs, each holding a whole copy of a file; the next server start does, by their pid.
 */
const WORKDIR = /^fss-thumb-(\d+)-[^/]+$/;

export function makeThumbnailWorkdir(): Promise<string> {
  return mkdtemp(join(tmpdir(), `fss-thumb-${process.pid}-`));
}

/** Removes the work dirs of processes that are no longer running; returns how many. */
export async function removeOrphanedThumbnailWorkdirs(): Promise<number> {
  const dir = tmpdir();
  let removed = 0;
  for (const name of await readdir(dir)) {
    const pid = Number(WORKDIR.exec(name)?.[1]);
    if (!pid || isRunning(pid)) continue;
    await rm(join(dir, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}

function isRunning(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, but someone else's.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
