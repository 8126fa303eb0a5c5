import { Readable, type Stream, Transform } from 'node:stream';
import { DataStore, ERRORS, type KvStore, StreamLimiter, Upload } from '@tus/utils';
import { Clock } from '../../common/clock.js';
import { ApiError, FileTooLarge } from '../../common/errors/api-error.js';
import { Transactions } from '../../infra/database/transactions.js';
import { BlobStorage, blobKeys } from '../../infra/storage/blob-storage.js';
import { SNIFF_BYTES } from '../files/file-type-detection.js';
import type { ReceivedUpload } from '../files/upload/upload-receiver.js';
import { UploadHasher } from '../files/upload/hashing/upload-hasher.js';
import { UploadReceiver } from '../files/upload/upload-receiver.js';
import { UploadReservationEntity } from '../files/upload/upload-reservation.entity.js';
import { UploadSizeLimit } from '../files/upload/upload-size-limit.js';
import { changeStorageUsage, refuseOverQuota, tryReserveStorage } from '../files/storage-usage.js';
import type { UploadBytes } from './bytes/upload-bytes.js';
import { type PatchMd5, ResumableMd5, ThreadPatchMd5 } from './resumable-md5.js';
import { ResumableUploadPartEntity } from './resumable-upload-part.entity.js';
import { ResumableUploadEntity } from './resumable-upload.entity.js';
import { forgetRow, rememberedRow, tusActor, tusRequestBody, tusRequests } from './tus-request.js';
import { parseUploadChecksum, verifiedChunk } from './upload-checksum.js';

/** A deferred upload's reservation grows this far ahead of its bytes, so a large one costs few database round trips. */
const QUOTA_STEP = 8 * 1024 * 1024;

/**
 * The tus data store @tus/server talks to: the storage driver's UploadBytes (local file or S3
 * multipart upload) with our rules around it. Our database is its record of every upload (the
 * resumable_uploads row, written by CreateResumableUploadHandler), so any process can go on with
 * any upload.
 *
 * It hashes as the bytes arrive and saves the MD5 state with the upload after each PATCH
 * (ResumableMd5), so the next PATCH, in this process or another, or after a restart, goes on
 * hashing where the last one stopped: no byte is read twice. Only when a PATCH was cut short
 * between what it hashed and what it stored does the state fall behind the offset; the bytes in
 * between are then read back once (at the next PATCH on local storage; on S3, whose unfinished
 * multipart uploads cannot be read, once the upload is complete).
 */
export class ResumableUploadStore extends DataStore {
  constructor(
    private readonly bytes: UploadBytes,
    private readonly rows: ResumableUploadRows,
    private readonly transactions: Transactions,
    private readonly receiver: UploadReceiver,
    private readonly storage: BlobStorage,
    private readonly clock: Clock,
    private readonly expiryMs: number,
    private readonly hasher: UploadHasher,
  ) {
    super();
    this.extensions = ['creation', 'creation-with-upload', 'creation-defer-length', 'termination', 'expiration', 'checksum'];
  }

  override getExpiration(): number {
    return this.expiryMs;
  }

  override async create(upload: Upload): Promise<Upload> {
    try {
      return await this.bytes.create(upload);
    } catch (error) {
      await this.forget(upload.id);
      throw error;
    }
  }

  override async getUpload(id: string): Promise<Upload> {
    const row = await this.rows.find(id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    // A completed upload's bytes became a file: it stays complete, so a retried last PATCH or HEAD learns it is done.
    if (row.fileId) return new Upload({ ...this.rows.upload(row), offset: row.length ?? 0 });
    return this.bytes.getUpload(id);
  }

  /** `placeholder` is @tus/server's empty body stream: the bytes come from the request itself (tusRequestBody). */
  override async write(placeholder: Readable, id: string, offset: number): Promise<number> {
    placeholder.resume();
    const row = await this.rows.find(id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    if (row.fileId) {
      tusRequestBody().resume();
      return offset;
    }
    const checksum = parseUploadChecksum(tusRequests.getStore()?.request.headers['upload-checksum']);
    // The limits hold the bytes as they arrive, before a checksummed chunk is set aside on disk until its digest is known:
    // no more of it is set aside than the upload may hold.
    const limit = row.length === null ? await this.deferredLimit(row, offset) : null;
    const body = limit ? metered(tusRequestBody(), limit.meter) : this.heldToLength(tusRequestBody(), row, offset);
    let chunk: { bytes: Readable; discard: () => Promise<void> } | null = null;
    try {
      chunk = checksum ? await verifiedChunk(body, checksum) : null;
      // Its idle expiry starts again when the PATCH ends (rows.progress); meanwhile the PATCH's lock keeps the expiry job away.
      const stored = await this.append(chunk?.bytes ?? body, row, offset);
      if (limit?.refusal()) throw limit.refusal();
      return stored;
    } catch (error) {
      // The stores report their own failure for a stream we cut; the client hears why we cut it.
      const refusal = limit?.refusal();
      if (refusal instanceof FileTooLarge) await this.forget(id);
      throw refusal ?? error;
    } finally {
      await chunk?.discard();
    }
  }

  /**
   * No more bytes than the upload's length leaves (413, @tus/server's own limit). Node already
   * holds a body to its Content-Length, which @tus/server checked against the length; only a body
   * without one (chunked) needs counting.
   */
  private heldToLength(readable: Readable, row: ResumableUploadEntity, offset: number): Readable {
    if (row.length === null || tusRequests.getStore()?.request.headers['content-length'] !== undefined) return readable;
    const limit = quiet(new StreamLimiter(row.length - offset));
    readable.on('error', (error) => limit.destroy(error));
    return readable.pipe(limit);
  }

  /** Stores the bytes at `offset`, hashing them on the way. */
  private async append(readable: Readable, row: ResumableUploadEntity, offset: number): Promise<number> {
    const id = row.id;
    // Whatever cuts the bytes short (a limit) is what the client hears, rather than the store's failure to write them;
    // it may have come during the awaits before this point (readable.errored).
    let cut: Error | null = null;
    readable.once('error', (error) => (cut = error));
    const md5 = await this.onThreadIfWorthIt(await this.md5At(row, offset));
    let source = readable;
    if (md5) {
      const hashing = quiet(new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          const behind = md5.update(chunk);
          if (behind) behind.then(() => callback(null, chunk), callback);
          else callback(null, chunk);
        },
      }));
      passErrorOn(source, hashing);
      source = source.pipe(hashing);
    }
    let stored = offset;
    try {
      stored = await this.bytes.write(source, id, offset);
      return stored;
    } catch (error) {
      throw cut ?? readable.errored ?? error;
    } finally {
      // Saved only when it is the MD5 of exactly the bytes stored; otherwise (or if the thread failed) the saved one stays (see md5At).
      const state = md5 && md5.offset === stored ? await md5.save().catch(() => undefined) : undefined;
      await this.rows.progress(id, state === undefined ? null : { state, offset: stored });
      md5?.release();
    }
  }

  /**
   * Holds the bytes of a PATCH to an upload of unknown length to the plan's maximum (413
   * file_too_large: the upload can never complete, so it is removed) and to the quota (413
   * storage_exceeded once the reservation cannot grow: the bytes before stay, and the upload
   * resumes once there is room). The reservation grows 8 MiB ahead of the bytes.
   */
  private async deferredLimit(row: ResumableUploadEntity, offset: number): Promise<{ meter: Transform; refusal: () => ApiError | null }> {
    const sizeLimit = new UploadSizeLimit(tusActor().plan);
    const declared = Number(tusRequests.getStore()?.request.headers['content-length'] ?? Number.NaN);
    const tooLarge = sizeLimit.checkDeclared(offset + declared, 0);
    if (tooLarge) {
      await this.forget(row.id, row);
      throw tooLarge;
    }
    // Where to start counting; holdQuota reads it again in its transaction before it changes it.
    let held = (await this.transactions.dataSource.getRepository(UploadReservationEntity).findOneBy({ id: row.id }))?.bytes ?? 0;
    let size = offset;
    let refusal: ApiError | null = null;
    const meter = quiet(new Transform({
      transform: (chunk: Buffer, _encoding, callback) => {
        size += chunk.length;
        refusal = sizeLimit.check(size);
        if (refusal) return callback(refusal);
        if (size <= held) return callback(null, chunk);
        this.holdQuota(row, size, sizeLimit.maxSize).then(
          (holding) => {
            if (holding instanceof ApiError) return callback((refusal = holding));
            held = holding;
            callback(null, chunk);
          },
          (error: Error) => callback(error),
        );
      },
    }));
    return { meter, refusal: () => refusal };
  }

  /** Grows a deferred upload's reservation to cover `size` bytes (a step ahead when the quota allows); the new amount, or storage_exceeded. */
  private async holdQuota(row: ResumableUploadEntity, size: number, maxSize: number): Promise<number | ApiError> {
    const held = await this.transactions.run(async (tx) => {
      const reservation = await tx.getRepository(UploadReservationEntity).findOneByOrFail({ id: row.id });
      if (reservation.bytes >= size) return reservation.bytes;
      for (const target of new Set([Math.min(maxSize, size + QUOTA_STEP), size])) {
        const more = target - reservation.bytes;
        if (!(await tryReserveStorage(tx, row.accountId, more))) continue;
        await tx.getRepository(UploadReservationEntity).update({ id: row.id }, { bytes: target, updatedAt: this.clock.now() });
        return target;
      }
      return null;
    });
    return held ?? this.transactions.run((tx) => refuseOverQuota(tx, row.accountId, size, this.clock.now()));
  }

  /** Termination: the bytes go and the quota comes back. A completed upload's file stays; only the upload is forgotten. */
  override async remove(id: string): Promise<void> {
    const row = await this.rows.find(id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    await this.forget(id, row);
  }

  /**
   * A deferred upload reserved the plan's maximum size (or what was left of the quota); once its
   * length is known it keeps exactly that much: it gives the rest back, or reserves what is missing.
   */
  override async declareUploadLength(id: string, length: number): Promise<void> {
    const tooLarge = new UploadSizeLimit(tusActor().plan).check(length);
    if (tooLarge) {
      await this.forget(id);
      throw tooLarge;
    }
    const now = this.clock.now();
    const accountId = await this.transactions.run(async (tx) => {
      const reservation = await tx.getRepository(UploadReservationEntity).findOneBy({ id });
      if (!reservation || reservation.fileId) throw ERRORS.FILE_NOT_FOUND;
      const excess = reservation.bytes - length;
      if (excess > 0) {
        await tx.getRepository(UploadReservationEntity).update({ id }, { bytes: length, updatedAt: now });
        await changeStorageUsage(tx, reservation.accountId, { used: 0, reserved: -excess }, now);
      } else if (excess < 0) {
        // It held less than its plan's maximum (the quota was short): the rest must fit now.
        if (!(await tryReserveStorage(tx, reservation.accountId, -excess))) return reservation.accountId;
        await tx.getRepository(UploadReservationEntity).update({ id }, { bytes: length, updatedAt: now });
      }
      forgetRow(id);
      await tx.getRepository(ResumableUploadEntity).update({ id }, { length });
      return null;
    });
    if (accountId) throw await this.transactions.run((tx) => refuseOverQuota(tx, accountId, length, now));
  }

  /** Expiry is ResumableUploadExpiry's scheduled job. */
  override async deleteExpired(): Promise<number> {
    return 0;
  }

  /** Every byte of a finished upload, as the multipart upload's commit takes them: the temporary blob, its MD5 and first bytes. */
  async received(row: ResumableUploadEntity, reserved: number): Promise<ReceivedUpload> {
    const size = row.length ?? -1;
    const tempKey = blobKeys.temp(row.id);
    // An empty upload never sent a byte to S3, so there is no object yet (and its multipart upload is not needed).
    if (size === 0 && !(await this.storage.exists(tempKey))) {
      await this.bytes.discard(row);
      await this.storage.write(tempKey, Readable.from([]));
    }
    const stored = (await this.storage.stat(tempKey))?.size ?? -1;
    if (stored !== size) throw ERRORS.FILE_NO_LONGER_EXISTS;
    const md5 = await ResumableMd5.resume(row.md5State, row.md5Offset);
    if (md5.offset > size) throw new Error(`Upload ${row.id} hashed past its length`);
    try {
      await this.hashStored(tempKey, md5, size);
    } catch (error) {
      md5.release();
      throw error;
    }
    const head: Buffer[] = [];
    if (size > 0) for await (const chunk of await this.storage.read(tempKey, { start: 0, end: Math.min(SNIFF_BYTES, size) - 1 })) head.push(chunk as Buffer);
    // A resumable upload reserves its whole length at creation, never counting on the bytes an overwrite replaces.
    const digest = md5.digest();
    md5.release();
    return { uploadId: row.id, tempKey, size, md5: digest, head: Buffer.concat(head), reserved, reservedAgainstReplaced: false };
  }

  /** Gives back what an unfinished upload holds (bytes, quota) and drops its row; for termination and expiry. */
  async forget(id: string, row?: ResumableUploadEntity | null): Promise<void> {
    const upload = row ?? (await this.rows.find(id));
    if (!upload?.fileId) {
      if (upload) await this.bytes.discard(upload);
      await this.receiver.release(id, blobKeys.temp(id));
    }
    await this.rows.delete(id);
  }

  /** The PATCH's bytes hash on the upload hashing thread when UploadHasher finds it worth it (more than two cores, a large PATCH). */
  private onThreadIfWorthIt(md5: ResumableMd5 | null): PatchMd5 | null {
    const length = Number(tusRequests.getStore()?.request.headers['content-length'] ?? NaN);
    if (!md5 || !this.hasher.worthTheThread(Number.isFinite(length) ? length : undefined)) return md5;
    const onThread = new ThreadPatchMd5(this.hasher.resume(md5.state()), md5.offset);
    md5.release();
    return onThread;
  }

  /**
   * The MD5 to go on with for a PATCH at `offset`: the saved one when it is at `offset`; when it is
   * behind, brought up to `offset` by reading the bytes in between (where they can be read; else
   * null: this PATCH is not hashed and completion reads what is missing). A saved MD5 past the
   * offset (the storage lost bytes it had hashed) no longer describes what will be stored: it starts over.
   */
  private async md5At(row: ResumableUploadEntity, offset: number): Promise<ResumableMd5 | null> {
    let md5 = await ResumableMd5.resume(row.md5State, row.md5Offset);
    if (md5.offset > offset) {
      md5.release();
      md5 = await ResumableMd5.resume(null, 0);
      await this.rows.progress(row.id, { state: null, offset: 0 });
    }
    if (md5.offset === offset) return md5;
    if (!this.bytes.readsUnfinished) {
      md5.release();
      return null;
    }
    await this.hashStored(blobKeys.temp(row.id), md5, offset);
    return md5;
  }

  /** Feeds `md5` the stored bytes from its offset up to `end`. */
  private async hashStored(key: string, md5: ResumableMd5, end: number): Promise<void> {
    if (md5.offset >= end) return;
    for await (const chunk of await this.storage.read(key, { start: md5.offset, end: end - 1 })) md5.update(chunk as Buffer);
    if (md5.offset !== end) throw ERRORS.FILE_NO_LONGER_EXISTS;
  }
}

/**
 * The resumable_uploads table, as @tus/file-store's config store and for the stores' progress.
 * Rows are written by CreateResumableUploadHandler (and the length by declareUploadLength), so
 * `set` has nothing to add.
 */
export class ResumableUploadRows implements KvStore<Upload> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly expiryMs: number,
  ) {}

  /** Read once per tus request (rememberedRow), and without a transaction: on PostgreSQL each round trip waits for the database. */
  find(id: string): Promise<ResumableUploadEntity | null> {
    return rememberedRow(id, () => this.transactions.dataSource.getRepository(ResumableUploadEntity).findOneBy({ id }));
  }

  async get(id: string): Promise<Upload | undefined> {
    const row = await this.find(id);
    return row ? this.upload(row) : undefined;
  }

  async set(): Promise<void> {}

  async delete(id: string): Promise<void> {
    forgetRow(id);
    await this.transactions.run(async (tx) => {
      await tx.getRepository(ResumableUploadPartEntity).delete({ uploadId: id });
      await tx.getRepository(ResumableUploadEntity).delete({ id });
    });
  }

  /** After a PATCH: the idle expiry starts again, and the MD5 so far is saved (unless null: the saved one stays). */
  async progress(id: string, md5: { state: string | null; offset: number } | null): Promise<void> {
    const change = md5 ? { md5State: md5.state, md5Offset: md5.offset } : {};
    const expiresAt = this.expiresFromNow();
    forgetRow(id);
    await this.transactions.run((tx) => tx.getRepository(ResumableUploadEntity).update({ id }, { expiresAt, ...change }));
    const context = tusRequests.getStore();
    if (context) context.expiresAt = expiresAt;
  }

  /** On S3: the multipart upload that receives the bytes. */
  async recordStorageUpload(id: string, storageUploadId: string): Promise<void> {
    forgetRow(id);
    await this.transactions.run((tx) => tx.getRepository(ResumableUploadEntity).update({ id }, { storageUploadId }));
  }

  /**
   * The upload as @tus sees it. @tus/server dates expiry from `creation_date`; ours runs from the
   * last activity, so the creation date it sees is that activity's (Upload-Expires then names the true expiry).
   */
  upload(row: ResumableUploadEntity): Upload {
    return new Upload({
      id: row.id,
      size: row.length ?? undefined,
      offset: 0,
      metadata: JSON.parse(row.metadata) as Record<string, string | null>,
      creation_date: new Date(row.expiresAt.getTime() - this.expiryMs).toISOString(),
    });
  }

  private expiresFromNow(): Date {
    return new Date(this.clock.now().getTime() + this.expiryMs);
  }
}

/**
 * A stream of the body path that can fail before anything reads it (a limit refused the bytes while the store was
 * still reading its state): without a listener that failure would be an uncaught exception, and the process would
 * exit. The failure stays on the stream (`errored`), and whatever pipes it afterwards rejects with it.
 */
function quiet<T extends Stream>(stream: T): T {
  stream.on('error', () => undefined);
  return stream;
}

/** `readable` through an upload's meter (deferredLimit), which fails with the reason it cut the bytes short. */
function metered(readable: Readable, meter: Transform): Readable {
  passErrorOn(readable, meter);
  return readable.pipe(meter);
}

/** What `pipe` does not do: a failure of `from`, including one before this call, destroys `to` with it. */
function passErrorOn(from: Readable, to: Stream & { destroy(error?: Error): unknown }): void {
  if (from.errored) to.destroy(from.errored);
  else from.on('error', (error) => to.destroy(error));
}
