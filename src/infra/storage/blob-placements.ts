import { Injectable } from '@nestjs/common';

/**
 * Blobs whose file row is committing or committed while their bytes still move from the temporary key
 * to the final one, in this process. Work queued from the commit's event (scans, thumbnails) waits
 * for them, so a job does not start before its bytes are where the row says (it would fail and retry).
 * A move in another process is not seen here; such a job still retries until the bytes are in place.
 */
@Injectable()
export class BlobPlacements {
  private readonly pending = new Map<string, Promise<void>>();

  /** Called before the row naming `key` commits; the answer is called once the blob is there, or will not come. */
  begin(key: string): () => void {
    let finish!: () => void;
    const placed = new Promise<void>((resolve) => (finish = resolve));
    this.pending.set(key, placed);
    return () => {
      if (this.pending.get(key) === placed) this.pending.delete(key);
      finish();
    };
  }

  /** Resolves once none of `keys` is still being placed (at once when none is). */
  async settled(keys: Iterable<string>): Promise<void> {
    const waits: Array<Promise<void>> = [];
    for (const key of keys) {
      const placing = this.pending.get(key);
      if (placing) waits.push(placing);
    }
    if (waits.length > 0) await Promise.all(waits);
  }
}
