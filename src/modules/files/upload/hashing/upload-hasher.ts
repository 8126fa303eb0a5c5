// Hashing on a worker thread takes about 1 CPU-second per GiB off the event loop, the bound on upload speed with more than two cores (docs/bench.md).
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { SPARE_SLOTS, ThreadDigest, type WorkerReply } from './thread-digest.js';
import { InlineDigest, type ResumableDigest, type UploadDigest } from './upload-digest.js';

/**
 * MD5 of uploads, multipart and resumable (a resumable upload's PATCH hands its saved state over and gets the
 * new one back: `resume`). With more than two cores it runs on one long-lived worker thread, so that hashing
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
/** Hashing this much takes well under a millisecond: less than the round trips to the thread. */
const INLINE_BYTES = 256 * 1024;

@Injectable()
export class UploadHasher implements OnModuleDestroy {
  private readonly logger = new Logger('UploadHasher');
  private worker: Worker | null = null;
  private readonly sessions = new Map<number, ThreadDigest>();
  private nextId = 1;
  /** Slots of finished uploads, for the next ones: no allocation per upload, no heap churn. */
  private readonly spareSlots: Buffer[] = [];

  /** Whether uploads (multipart, and resumable uploads' PATCHes) hash on the thread (see above); tests set it to cover both ways. */
  onThread = availableParallelism() > 2;

  /**
   * A new MD5 for one upload; call `digest()` or `cancel()` on it exactly once. An upload known to
   * be at most `INLINE_BYTES` (`knownSize`) hashes on the event loop: handing a few KiB to the thread
   * costs more than hashing them.
   */
  start(knownSize?: number): UploadDigest {
    if (!this.worthTheThread(knownSize)) return new InlineDigest();
    return this.session();
  }

  /** Whether bytes of this size (unknown: undefined) hash on the thread. */
  worthTheThread(knownSize?: number): boolean {
    return this.onThread && !(knownSize !== undefined && knownSize <= INLINE_BYTES);
  }

  /**
   * A resumable upload's MD5 on the thread, going on from `state` (ResumableMd5's saved state; null: from nothing),
   * for the bytes of one PATCH; call `save()` or `cancel()` on it exactly once. Only when `worthTheThread`.
   */
  resume(state: string | null): ResumableDigest {
    return this.session(state);
  }

  private session(resume?: string | null): ThreadDigest {
    const id = this.nextId++;
    const session = new ThreadDigest(
      (message, transfer) => this.post(message, transfer),
      (slots) => {
        this.sessions.delete(id);
        for (const slot of slots) if (this.spareSlots.length < SPARE_SLOTS) this.spareSlots.push(slot);
      },
      () => this.spareSlots.pop(),
      id,
      resume,
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
    const worker = new Worker(new URL('./md5.worker.cjs', import.meta.url), {
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
