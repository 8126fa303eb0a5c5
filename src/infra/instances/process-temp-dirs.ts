import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Scratch dirs under os.tmpdir() named after the process that made them (`<prefix>-<pid>-XXXXXX`). A process that
 * dies mid-work (SIGKILL, the OOM killer, a power cut) cannot remove its dirs, each of which may hold a whole copy of a
 * file; the next start removes those of processes no longer running, told apart by the pid in their name.
 */
export function makeProcessTempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `${prefix}-${process.pid}-`));
}

/** Removes the `prefix` dirs of processes that are no longer running; returns how many. */
export async function removeOrphanedProcessTempDirs(prefix: string): Promise<number> {
  const named = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d+)-[^/]+$`);
  const dir = tmpdir();
  let removed = 0;
  for (const name of await readdir(dir)) {
    const pid = Number(named.exec(name)?.[1]);
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
