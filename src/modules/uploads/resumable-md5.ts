import { createMD5, type IHasher } from 'hash-wasm';

/**
 * The MD5 of an upload's first `offset` bytes, resumable anywhere: its state (156 bytes) is saved
 * with the upload after each PATCH and loaded by whichever process receives the next one. Node's
 * own MD5 cannot export its state, hence hash-wasm's (as fast on this hardware, see docs/files.md).
 */
/**
 * Hashers to reuse: each is a WebAssembly instance with its own memory, which V8 frees only in a
 * full collection, so one per PATCH made the resting memory creep up with the bytes uploaded.
 */
const idleHashers: IHasher[] = [];
const MAX_IDLE_HASHERS = 8;

export class ResumableMd5 {
  private constructor(
    private readonly hasher: IHasher,
    public offset: number,
  ) {}

  /** From a saved state of the first `offset` bytes, or from nothing. */
  static async resume(state: string | null, offset: number): Promise<ResumableMd5> {
    const hasher = idleHashers.pop() ?? (await createMD5());
    hasher.init();
    if (state === null) return new ResumableMd5(hasher, 0);
    hasher.load(Buffer.from(state, 'base64'));
    return new ResumableMd5(hasher, offset);
  }

  update(chunk: Uint8Array): void {
    this.hasher.update(chunk);
    this.offset += chunk.length;
  }

  save(): string {
    return Buffer.from(this.hasher.save()).toString('base64');
  }

  digest(): string {
    return this.hasher.digest('hex');
  }

  /** Done with it (after `save()` or `digest()`): its hasher serves the next upload. */
  release(): void {
    if (idleHashers.length < MAX_IDLE_HASHERS && !idleHashers.includes(this.hasher)) idleHashers.push(this.hasher);
  }
}
