// What the upload path sees of the MD5, whether it is computed on the event loop or on the hashing thread.
import { createHash } from 'node:crypto';

/** One upload's MD5 in the making, wherever it is computed. */
export interface UploadDigest {
  /**
   * Adds bytes (the caller may reuse `chunk` afterwards). Answers undefined when taken at once, or
   * a promise to await before the next call.
   */
  update(chunk: Buffer): Promise<void> | undefined;
  /** The hex MD5 of every byte given. */
  digest(): Promise<string>;
  /** Drops the hash (the upload failed). */
  cancel(): void;
}

/** One PATCH's share of a resumable upload's MD5, on the hashing thread: it ends with its state saved, not a digest. */
export interface ResumableDigest extends UploadDigest {
  /** The state (base64, hash-wasm's MD5) of every byte given so far, from the upload's start. */
  save(): Promise<string>;
}

/** On the event loop. */
export class InlineDigest implements UploadDigest {
  private readonly hash = createHash('md5');

  update(chunk: Buffer): undefined {
    this.hash.update(chunk);
    return undefined;
  }

  digest(): Promise<string> {
    return Promise.resolve(this.hash.digest('hex'));
  }

  cancel(): void {}
}
