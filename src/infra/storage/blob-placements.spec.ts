import { describe, expect, it } from 'vitest';
import { BlobPlacements } from './blob-placements.js';

describe('BlobPlacements', () => {
  it('holds work on a blob until its placement is done, and never holds work on other blobs', async () => {
    const placements = new BlobPlacements();
    const done = placements.begin('files/acc/file/v1');
    let settled = false;
    const waiting = placements.settled(['files/acc/file/v1', 'files/acc/other/v1']).then(() => (settled = true));
    await placements.settled(['files/acc/other/v1']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    done();
    await waiting;
    expect(settled).toBe(true);
    // Done twice, or after a newer placement of the same key began, changes nothing.
    const newer = placements.begin('files/acc/file/v1');
    done();
    let newerSettled = false;
    const waitingNewer = placements.settled(['files/acc/file/v1']).then(() => (newerSettled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(newerSettled).toBe(false);
    newer();
    await waitingNewer;
  });
});
