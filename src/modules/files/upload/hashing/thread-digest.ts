// One upload's MD5 computed on the hashing thread (md5.worker.cjs): bytes cross as transferred slots, so memory stays flat.
import type { ResumableDigest } from './upload-digest.js';

/**
 * Bytes are handed to the hashing thread in slots this big; each upload owns at most SLOTS_PER_UPLOAD
 * of them (2 MiB), and the receiving side waits when all are out. Smaller slots cost more messages,
 * larger ones more memory per upload.
 */
const SLOT_BYTES = 512 * 1024;
const SLOTS_PER_UPLOAD = 4;
export const SPARE_SLOTS = 8;

/** What the hashing thread answers. */
export interface WorkerReply {
  id: number;
  slot?: ArrayBuffer;
  digest?: string;
  /** The saved state of a resumable MD5 (base64). */
  state?: string;
  /** Why the thread dropped this upload's hash (a saved state it could not load). */
  error?: string;
}

/** On the hashing thread. */
export class ThreadDigest implements ResumableDigest {
  private readonly free: Buffer[] = [];
  private allocated = 0;
  private slot: Buffer | null = null;
  private filled = 0;
  private waitingForSlot: { resolve: () => void; reject: (error: Error) => void } | null = null;
  private result: { resolve: (digestOrState: string) => void; reject: (error: Error) => void } | null = null;
  private failure: Error | null = null;
  private finished = false;

  constructor(
    private readonly post: (message: object, transfer: ArrayBuffer[]) => void,
    private readonly forget: (spareSlots: Buffer[]) => void,
    private readonly spareSlot: () => Buffer | undefined,
    private readonly id: number,
    resume?: string | null,
  ) {
    // A resumable MD5 (hash-wasm on the thread) goes on from its saved state; a multipart upload's is Node's own.
    if (resume !== undefined) this.post({ id, resume }, []);
  }

  /** Copies the bytes into a slot; waits only when every slot of this upload is being hashed. */
  update(chunk: Buffer): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure);
    let copied = 0;
    while (copied < chunk.length) {
      this.slot ??= this.takeSlot();
      if (!this.slot) {
        const rest = chunk.subarray(copied);
        return new Promise<void>((resolve, reject) => (this.waitingForSlot = { resolve, reject })).then(() => this.update(rest));
      }
      const n = chunk.copy(this.slot, this.filled, copied);
      copied += n;
      this.filled += n;
      if (this.filled === this.slot.length) this.send();
    }
    return undefined;
  }

  /** Once the hashing thread has caught up. */
  digest(): Promise<string> {
    return this.finish('digest');
  }

  /** A resumable MD5's state once the hashing thread has caught up, to go on from later (ResumableMd5). */
  save(): Promise<string> {
    return this.finish('save');
  }

  /** What is still queued on the thread is thrown away. */
  cancel(): void {
    if (this.finished) return;
    this.finished = true;
    this.forget([]);
    if (!this.failure) this.post({ id: this.id, end: 'cancel' }, []);
  }

  /** @internal A reply of the hashing thread for this upload. */
  receive(reply: WorkerReply): void {
    if (reply.slot) {
      this.free.push(Buffer.from(reply.slot));
      const waiting = this.waitingForSlot;
      this.waitingForSlot = null;
      waiting?.resolve();
    }
    const answer = reply.digest ?? reply.state;
    if (answer !== undefined) {
      // Every slot is back by now: the thread answers after giving back the last one.
      this.forget(this.free.splice(0));
      this.result?.resolve(answer);
    }
    if (reply.error !== undefined) {
      this.fail(new Error(`The hashing thread dropped an upload's MD5: ${reply.error}`));
      this.post({ id: this.id, end: 'cancel' }, []);
    }
  }

  /** @internal The hashing thread died. */
  fail(error: Error): void {
    this.failure = error;
    this.forget([]);
    this.waitingForSlot?.reject(error);
    this.result?.reject(error);
  }

  private takeSlot(): Buffer | null {
    const reused = this.free.pop();
    if (reused) return reused;
    if (this.allocated === SLOTS_PER_UPLOAD) return null;
    this.allocated++;
    // Its own ArrayBuffer (never Node's shared pool), so it can be transferred.
    return this.spareSlot() ?? Buffer.from(new ArrayBuffer(SLOT_BYTES));
  }

  /** Hands the filled part of the current slot (possibly none) to the thread. */
  private finish(end: 'digest' | 'save'): Promise<string> {
    if (this.failure) return Promise.reject(this.failure);
    this.finished = true;
    return new Promise<string>((resolve, reject) => {
      this.result = { resolve, reject };
      this.send(end);
    });
  }

  private send(end?: 'digest' | 'save'): void {
    const slot = this.slot;
    this.slot = null;
    const length = this.filled;
    this.filled = 0;
    if (slot && length > 0) {
      const buffer = slot.buffer as ArrayBuffer;
      this.post({ id: this.id, slot: buffer, length, end }, [buffer]);
    } else {
      if (slot) this.free.push(slot);
      if (end) this.post({ id: this.id, end }, []);
    }
  }
}
