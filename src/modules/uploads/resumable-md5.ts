import { createMD5, type IHasher } from 'hash-wasm';
import type { ResumableDigest } from '../files/upload/hashing/upload-digest.js';

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

export class ResumableMd5 implements PatchMd5 {
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

  update(chunk: Uint8Array): undefined {
    this.hasher.update(chunk);
    this.offset += chunk.length;
    return undefined;
  }

  /** Its state, to save with the upload; null before the first byte. */
  state(): string | null {
    return this.offset > 0 ? Buffer.from(this.hasher.save()).toString('base64') : null;
  }

  save(): Promise<string | null> {
    return Promise.resolve(this.state());
  }

  digest(): string {
    return this.hasher.digest('hex');
  }

  /** Done with it (after `save()` or `digest()`): its hasher serves the next upload. */
  release(): void {
    if (idleHashers.length < MAX_IDLE_HASHERS && !idleHashers.includes(this.hasher)) idleHashers.push(this.hasher);
  }
}

/** The MD5 of a PATCH's bytes as they stream: on the event loop (ResumableMd5) or on the hashing thread (ThreadPatchMd5). */
export interface PatchMd5 {
  /** Bytes hashed, from the upload's start. */
  readonly offset: number;
  /** Answers a promise to await before the next call when the thread is behind. */
  update(chunk: Buffer): Promise<void> | undefined;
  /** The state covering `offset` bytes, to save with the upload; null before the first byte. */
  save(): Promise<string | null>;
  /** Done with it, saved or not. */
  release(): void;
}

/** A PATCH hashed on the upload hashing thread (UploadHasher), from a ResumableMd5's state. */
export class ThreadPatchMd5 implements PatchMd5 {
  constructor(
    private readonly digest: ResumableDigest,
    public offset: number,
  ) {}

  update(chunk: Buffer): Promise<void> | undefined {
    this.offset += chunk.length;
    return this.digest.update(chunk);
  }

  save(): Promise<string | null> {
    return this.offset > 0 ? this.digest.save() : Promise.resolve(null);
  }

  release(): void {
    this.digest.cancel();
  }
}
