import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';

/**
 * Bytes are handed to the hashing thread in slots this big; each upload owns at most SLOTS_PER_UPLOAD
 * of them (2 MiB), and the receiving side waits when all are out. Smaller slots cost more messages,
 * larger ones more memory per upload.
 */
const SLOT_BYTES = 512 * 1024;
const SLOTS_PER_UPLOAD = 4;
const SPARE_SLOTS = 8;

/**
 * The hashing thread: one MD5 per upload id, fed slots in order and giving each slot back once
 * hashed. Plain CommonJS run with `eval`, so it loads nothing but node:crypto (its isolate stays
 * small) and needs no file of its own next to the compiled code.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const hashes = new Map();
parentPort.on('message', ({ id, slot, length, end }) => {
  let hash = hashes.get(id);
  if (!hash) hashes.set(id, (hash = createHash('md5')));
  if (slot) {
    hash.update(new Uint8Array(slot, 0, length));
    parentPort.postMessage({ id, slot }, [slot]);
  }
  if (end === 'digest') parentPort.postMessage({ id, digest: hash.digest('hex') });
  if (end) hashes.delete(id);
});
`;

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

interface WorkerReply {
  id: number;
  slot?: ArrayBuffer;
  digest?: string;
}

/**
 * MD5 of uploads. With more than two cores it runs on one long-lived worker thread, so that hashing
 * (the costliest step of an upload) overlaps with receiving and writing on the event loop instead
 * of taking turns with them. The thread starts with the first upload. Concurrent uploads share it:
 * their slots interleave, so none waits for another to finish; together they hash as fast as one
 * core allows, as they did on the event loop. Bytes cross as transferred slots (no copy besides the
 * one into the slot), and slots go back and forth, so memory stays flat.
 *
 * With two cores or fewer there is no core for the thread: the client or proxy, the event loop, the
 * file writes and the hasher compete, the thread costs more CPU in all (about 0.5 s per GiB in
 * wakeups and handoffs) and about 10 MiB of memory, and measured uploads were no faster; so the
 * hash is computed on the event loop there.
 */
@Injectable()
export class UploadHasher implements OnModuleDestroy {
  private readonly logger = new Logger('UploadHasher');
  private worker: Worker | null = null;
  private readonly sessions = new Map<number, ThreadDigest>();
  private nextId = 1;
  /** Slots of finished uploads, for the next ones: no allocation per upload, no heap churn. */
  private readonly spareSlots: Buffer[] = [];

  /** Whether uploads hash on the thread (see above); tests set it to cover both ways. */
  onThread = availableParallelism() > 2;

  /** A new MD5 for one upload; call `digest()` or `cancel()` on it exactly once. */
  start(): UploadDigest {
    if (!this.onThread) return new InlineDigest();
    const id = this.nextId++;
    const session = new ThreadDigest(
      (message, transfer) => this.post(message, transfer),
      (slots) => {
        this.sessions.delete(id);
        for (const slot of slots) if (this.spareSlots.length < SPARE_SLOTS) this.spareSlots.push(slot);
      },
      () => this.spareSlots.pop(),
      id,
    );
    this.sessions.set(id, session);
    return session;
  }

  async onModuleDestroy(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
    for (const session of this.sessions.values()) session.fail(new Error('The service is shutting down'));
  }

  private post(message: object, transfer: ArrayBuffer[]): void {
    this.ensureWorker().postMessage(message, transfer);
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      stdout: false,
      stderr: false,
      // It allocates next to nothing: a small heap keeps the thread's memory small.
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
    });
    // An idle hasher must not keep a process (the CLI, a test run) alive.
    worker.unref();
    worker.on('message', (reply: WorkerReply) => this.sessions.get(reply.id)?.receive(reply));
    const fail = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.logger.error({ err: error }, 'The upload hashing thread stopped; uploads in progress fail, the next one starts a new thread');
      for (const session of this.sessions.values()) session.fail(error);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`The upload hashing thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }
}

/** On the event loop. */
class InlineDigest implements UploadDigest {
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

/** On the hashing thread. */
class ThreadDigest implements UploadDigest {
  private readonly free: Buffer[] = [];
  private allocated = 0;
  private slot: Buffer | null = null;
  private filled = 0;
  private waitingForSlot: { resolve: () => void; reject: (error: Error) => void } | null = null;
  private result: { resolve: (digest: string) => void; reject: (error: Error) => void } | null = null;
  private failure: Error | null = null;
  private finished = false;

  constructor(
    private readonly post: (message: object, transfer: ArrayBuffer[]) => void,
    private readonly forget: (spareSlots: Buffer[]) => void,
    private readonly spareSlot: () => Buffer | undefined,
    private readonly id: number,
  ) {}

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
    if (this.failure) return Promise.reject(this.failure);
    this.finished = true;
    return new Promise<string>((resolve, reject) => {
      this.result = { resolve, reject };
      this.send('digest');
    });
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
    if (reply.digest !== undefined) {
      // Every slot is back by now: the thread answers the digest after giving back the last one.
      this.forget(this.free.splice(0));
      this.result?.resolve(reply.digest);
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
  private send(end?: 'digest'): void {
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
