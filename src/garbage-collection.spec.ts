import { getHeapSpaceStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { collectGarbage } from './garbage-collection.js';

const MiB = 1024 * 1024;

function oldSpace(): { committed: number; used: number } {
  const space = getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
  if (!space) throw new Error('V8 reports no old space');
  return { committed: space.space_size, used: space.space_used_size };
}

describe('the collection after start-up', () => {
  it('gives back the old-generation pages that start-up garbage left half empty', () => {
    // Start-up's pattern: many long-lived objects, every other one garbage once start-up is over.
    const rows: Array<{ id: number; name: string } | null> = [];
    for (let i = 0; i < 400_000; i++) rows.push({ id: i, name: `file-${i}` });
    collectGarbage();
    for (let i = 0; i < rows.length; i += 2) rows[i] = null;
    const before = oldSpace();

    collectGarbage();

    const after = oldSpace();
    expect(rows.length).toBe(400_000);
    // Without compaction the committed size stays where it was and only the used size halves.
    expect(before.committed - after.committed).toBeGreaterThan(4 * MiB);
    expect(after.committed - after.used).toBeLessThan(4 * MiB);
  });
});
