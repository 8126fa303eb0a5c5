import { createHash } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { ApiError, StorageExceeded } from '../../../common/errors/api-error.js';
import { newId } from '../../../common/ids.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { ServerInstance } from '../../../infra/instances/server-instance.js';
import { Outbox } from '../../../infra/outbox/outbox.js';
import { BlobStorage, blobKeys } from '../../../infra/storage/blob-storage.js';
import { AccountEntity } from '../../accounts/account.entity.js';
import { FileEntity } from '../file.entity.js';
import { nameKeyOf } from '../file-naming.js';
import { quotaExceeded } from '../events/file-events.js';
import { SNIFF_BYTES } from '../file-type-detection.js';
import { tryReserveStorage } from '../storage-usage.js';
import { UploadHasher } from './hashing/upload-hasher.js';
import { UploadReservationEntity } from './upload-reservation.entity.js';
import { UploadSizeLimit } from './upload-size-limit.js';

/** Quota is reserved ahead of the bytes in steps this big, so a large upload costs few database round trips. */
const RESERVATION_STEP = 8 * 1024 * 1024;

/**
 * A request whose Content-Length is at most this is a small upload: it reserves nothing while its
 * bytes arrive. Its quota is charged by the transaction that commits the file (one conditional
 * UPDATE, the last statement before COMMIT), so it costs one transaction and one touch of the
 * account row. Refused over quota, it has streamed at most this much to a temporary blob.
 */
export const SMALL_UPLOAD_BYTES = 1024 * 1024;

/**
 * A request whose Content-Length is at most this is read into memory and stored with one write: for a few KiB,
 * a Transform, a write stream and a pipeline cost more CPU than the bytes themselves.
 */
export const BUFFERED_UPLOAD_BYTES = 64 * 1024;

/** Rolls back a reservation row whose declared length the quota has no room for. */
class NoRoomForDeclaredLength extends Error {}

/** What a finished stream left in temporary storage. */
export interface ReceivedUpload {
  uploadId: string;
  tempKey: string;
  size: number;
  md5: string;
  /** The first bytes, for type detection. */
  head: Buffer;
  /** Quota held for this upload (>= size); handed over to storage_used when the file row commits. */
  reserved: number;
  /** True when the reservation counted on the bytes of the file this upload overwrites (see OverwriteTarget). */
  reservedAgainstReplaced: boolean;
  /**
   * A small upload: no reservation row and no reserved quota exist; the commit checks and charges
   * the quota and records the upload (for crash recovery of the blob move) in its own transaction.
   */
  quotaAtCommit?: boolean;
}

/** The file an upload says (in form fields sent before the file part) it will overwrite. */
export interface OverwriteTarget {
  name: string;
  folderId: string | null;
}

/**
 * Streams one uploaded file into a temporary blob while hashing and counting it, enforcing the
 * plan's maximum size and reserving quota as the bytes arrive. Memory stays flat: the bytes flow
 * through with backpressure and only the first 4 KiB are kept. On any failure it leaves nothing
 * behind: the partial blob is removed and the reservation given back.
 */
@Injectable()
export class UploadReceiver {
  private readonly logger = new Logger('UploadReceiver');

  constructor(
    private readonly transactions: Transactions,
    private readonly storage: BlobStorage,
    private readonly clock: Clock,
    private readonly instance: ServerInstance,
    private readonly hasher: UploadHasher,
  ) {}

  /**
   * `sizeHint` is the request's Content-Length when known: an upper bound of the file size, tried
   * as the first reservation so that of several concurrent uploads the ones that fit whole get it.
   * `overwriteTarget` is asked when the quota is full: an overwrite needs room only for its net change.
   */
  async receive(
    actor: Actor,
    source: Readable,
    signal?: AbortSignal,
    sizeHint?: number,
    overwriteTarget?: () => OverwriteTarget | null,
  ): Promise<ReceivedUpload> {
    const uploadId = newId('upl');
    const tempKey = blobKeys.temp(uploadId);
    if (sizeHint !== undefined && sizeHint <= BUFFERED_UPLOAD_BYTES) return this.receiveBuffered(actor, source, signal, uploadId, tempKey);
    const now = this.clock.now();
    const quotaAtCommit = sizeHint !== undefined && sizeHint <= SMALL_UPLOAD_BYTES;
    let reserved = 0;
    // The reservation row is written while the first bytes arrive (up to SMALL_UPLOAD_BYTES, as much as a small
    // upload streams unreserved), rather than before them: the client is not held up for its transaction.
    let opening: Promise<void> | null = quotaAtCommit
      ? null
      : this.openReservation(actor.accountId, uploadId, tempKey, sizeHint ?? 0, now).then((held) => {
          reserved = held;
          opening = null;
        });
    // Whoever needs the reservation awaits it; until then its failure must not count as unhandled.
    opening?.catch(() => undefined);
    const sizeLimit = new UploadSizeLimit(actor.plan);
    const hash = this.hasher.start(quotaAtCommit ? sizeHint : undefined);
    const headChunks: Buffer[] = [];
    let headLength = 0;
    let size = 0;
    let reservedAgainstReplaced = false;
    let refusal = null as ApiError | null;

    /** Quota held for every byte received so far: the first reservation once written, then more as needed. */
    const reserveReceived = async (): Promise<void> => {
      if (opening) await opening;
      if (quotaAtCommit || size <= reserved) return;
      const { granted, againstReplaced } = await this.reserveMore(actor.accountId, uploadId, size - reserved, overwriteTarget?.() ?? null);
      if (granted === 0) throw (refusal = new StorageExceeded(0, 0, size));
      reserved += granted;
      reservedAgainstReplaced ||= againstReplaced;
    };

    const meter = new Transform({
      transform: (chunk: Buffer, _encoding, callback: TransformCallback) => {
        size += chunk.length;
        const tooLarge = sizeLimit.check(size);
        if (tooLarge) {
          refusal = tooLarge;
          return callback(refusal);
        }
        if (headLength < SNIFF_BYTES) {
          headChunks.push(chunk.subarray(0, SNIFF_BYTES - headLength));
          headLength += Math.min(chunk.length, SNIFF_BYTES - headLength);
        }
        const passOn = () => {
          if (quotaAtCommit || size <= reserved || (opening && size <= SMALL_UPLOAD_BYTES)) return callback(null, chunk);
          reserveReceived().then(() => callback(null, chunk), (error: Error) => callback(error));
        };
        // Hashed on another thread while this chunk is written; waits only when the hasher is behind.
        const hashing = hash.update(chunk);
        if (hashing) hashing.then(passOn, (error: Error) => callback(error));
        else passOn();
      },
      // The last bytes may have passed while the first reservation was still being written.
      flush: (callback: TransformCallback) => {
        reserveReceived().then(() => callback(), (error: Error) => callback(error));
      },
    });

    // The storage adapter may start listening only after some set-up (a directory, a multipart
    // session); an early refusal must not become an unhandled 'error' event meanwhile.
    meter.on('error', () => undefined);
    try {
      source.on('error', (error) => meter.destroy(error));
      // The source may have failed while the reservation was written (a multipart body cut short); its
      // 'error' is gone by now, and piping a destroyed stream would wait forever.
      if (source.destroyed && !source.readableEnded) meter.destroy(source.errored ?? new Error('The upload ended before its bytes were read'));
      // A client that goes away mid-upload must not leave the write waiting forever; also one that left while the
      // reservation was written (its 'abort' is gone by now): the upload would hang, holding its reserved quota.
      const clientGone = () => meter.destroy(new Error('The client aborted the upload'));
      if (signal?.aborted) clientGone();
      else signal?.addEventListener('abort', clientGone, { once: true });
      source.pipe(meter);
      await this.storage.write(tempKey, meter);
      const head = headChunks.length === 1 ? headChunks[0] : Buffer.concat(headChunks);
      return { uploadId, tempKey, size, md5: await hash.digest(), head, reserved, reservedAgainstReplaced, quotaAtCommit };
    } catch (error) {
      hash.cancel();
      source.unpipe(meter);
      // A reservation still being written is given back once it is there, not left held until the sweeper finds it.
      await opening?.catch(() => undefined);
      if (quotaAtCommit) await this.storage.delete(tempKey).catch((e: unknown) => this.logger.warn({ err: e, tempKey }, 'Could not remove a temporary blob'));
      else await this.release(uploadId, tempKey);
      if (refusal instanceof StorageExceeded) throw await this.quotaRefusal(actor, source, size, sizeLimit);
      // Let the parser run on to the end of the request (bytes dropped) while the refusal is answered.
      source.resume();
      throw refusal ?? error;
    }
  }

  /**
   * A small upload (Content-Length at most BUFFERED_UPLOAD_BYTES, so memory stays bounded): its bytes are
   * collected, hashed and written to the temporary blob at once. Like every small upload it reserves nothing
   * (quotaAtCommit); a failure leaves no blob, since none is written before the last byte arrived.
   */
  private async receiveBuffered(actor: Actor, source: Readable, signal: AbortSignal | undefined, uploadId: string, tempKey: string): Promise<ReceivedUpload> {
    const sizeLimit = new UploadSizeLimit(actor.plan);
    let refusal = null as ApiError | null;
    const bytes = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const settle = (error: Error | null) => {
        source.off('data', onData);
        source.off('end', onEnd);
        source.off('error', onError);
        source.off('close', onClose);
        signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
      };
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        refusal = sizeLimit.check(size);
        if (refusal) return settle(refusal);
        chunks.push(chunk);
      };
      const onEnd = () => settle(null);
      const onError = (error: Error) => settle(error);
      const onClose = () => settle(new Error('The upload ended before its bytes were read'));
      const onAbort = () => settle(new Error('The client aborted the upload'));
      source.on('data', onData);
      source.once('end', onEnd);
      source.once('error', onError);
      source.once('close', onClose);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      if (source.destroyed && !source.readableEnded) settle(source.errored ?? new Error('The upload ended before its bytes were read'));
    }).catch((error: unknown) => {
      // Let the parser run on to the end of the request (bytes dropped) while the refusal is answered.
      source.resume();
      throw refusal ?? error;
    });
    const md5 = createHash('md5').update(bytes).digest('hex');
    await this.storage.writeBytes(tempKey, bytes);
    return { uploadId, tempKey, size: bytes.length, md5, head: bytes.subarray(0, SNIFF_BYTES), reserved: 0, reservedAgainstReplaced: false, quotaAtCommit: true };
  }

  /**
   * Writes the upload's reservation row as its first bytes arrive, holding the whole declared length
   * (Content-Length, an upper bound of the file) in the same transaction when the quota has room for it:
   * then the upload needs no further round trip to the database until it commits. Answers the bytes held
   * (0 when the length is unknown or does not fit: the upload then reserves step by step as bytes arrive,
   * so of several concurrent uploads the ones that fit still succeed).
   */
  private async openReservation(accountId: string, uploadId: string, tempKey: string, declared: number, now: Date): Promise<number> {
    const insert = (tx: EntityManager, bytes: number) =>
      tx
        .createQueryBuilder()
        .insert()
        .into(UploadReservationEntity)
        .values({ id: uploadId, accountId, bytes, tempKey, createdAt: now, updatedAt: now, instanceId: this.instance.id, fileId: null, obsoleteBlobKeys: null })
        // Every column is given: no read-back of defaults after the INSERT.
        .updateEntity(false)
        .execute();
    if (declared > 0) {
      const held = await this.transactions
        .run(async (tx) => {
          await insert(tx, declared);
          // Last before COMMIT, so the account row is locked for one statement's length; no room rolls the row back.
          if (!(await tryReserveStorage(tx, accountId, declared))) throw new NoRoomForDeclaredLength();
          return declared;
        })
        .catch((error: unknown) => {
          if (error instanceof NoRoomForDeclaredLength) return 0;
          throw error;
        });
      if (held > 0) return held;
    }
    await this.transactions.run((tx) => insert(tx, 0));
    return 0;
  }

  /**
   * Reserves at least `needed` more bytes: a step ahead when the quota allows, else exactly what is
   * needed (so an upload that exactly fills the quota succeeds). 0 when even that does not fit.
   * When the quota is full and the upload overwrites a file, the bytes that file frees count as room.
   */
  private async reserveMore(
    accountId: string,
    uploadId: string,
    needed: number,
    overwriteTarget: OverwriteTarget | null,
  ): Promise<{ granted: number; againstReplaced: boolean }> {
    const attempts = [...(needed < RESERVATION_STEP ? [RESERVATION_STEP] : []), needed];
    return this.transactions.run(async (tx) => {
      const reservation = () => tx.createQueryBuilder().update(UploadReservationEntity).where('id = :uploadId', { uploadId });
      // The reservation row first, locked (the order release() takes too): if the upload was released meanwhile
      // (its client went away while this waited), nothing may be added to the account that no row gives back.
      const open = await reservation().set({ updatedAt: this.clock.now() }).execute();
      if (!open.affected) throw new Error('The upload was released while it reserved more quota');
      const hold = async (bytes: number, credit: number) => {
        if (!(await tryReserveStorage(tx, accountId, bytes, credit))) return false;
        await reservation()
          .set({ bytes: () => `bytes + ${bytes}` })
          .execute();
        return true;
      };
      for (const bytes of attempts) {
        if (await hold(bytes, 0)) return { granted: bytes, againstReplaced: false };
      }
      if (overwriteTarget) {
        const replaced = await tx.getRepository(FileEntity).findOne({
          select: { id: true, size: true },
          where: { accountId, folderKey: overwriteTarget.folderId ?? '', nameKey: nameKeyOf(overwriteTarget.name), state: 'active' },
        });
        if (replaced && (await hold(needed, replaced.size))) return { granted: needed, againstReplaced: true };
      }
      return { granted: 0, againstReplaced: false };
    });
  }

  /**
   * The quota refusal names the file's whole size, so the rest of the file is read (and dropped,
   * never stored) to learn it, up to the plan's maximum. Then user.quota_exceeded is recorded in
   * its own transaction, since the upload itself changes nothing.
   */
  private async quotaRefusal(actor: Actor, source: Readable, sizeSoFar: number, sizeLimit: UploadSizeLimit): Promise<ApiError> {
    let size = sizeSoFar;
    const tooLarge = await new Promise<ApiError | null>((resolve) => {
      if (source.readableEnded || source.destroyed) return resolve(null);
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        const refusal = sizeLimit.check(size);
        if (refusal) {
          source.off('data', onData);
          resolve(refusal);
        }
      };
      source.on('data', onData);
      source.once('end', () => resolve(null));
      source.once('error', () => resolve(null));
      source.once('close', () => resolve(null));
      source.resume();
    });
    if (tooLarge) return tooLarge;
    const now = this.clock.now();
    return this.transactions.run(async (tx) => {
      const account = await tx.getRepository(AccountEntity).findOneByOrFail({ id: actor.accountId });
      const current = account.storageUsed + account.storageReserved;
      const limit = account.storageLimit;
      await Outbox.record(tx, quotaExceeded(actor.accountId, now, { used: current, limit, overage: current + size - limit }));
      return new StorageExceeded(current, limit, size);
    });
  }

  /**
   * Gives back an upload's reservation and removes its temporary bytes; safe to call twice. An
   * upload whose file row committed is left alone: its bytes belong to the file now.
   */
  async release(uploadId: string, tempKey: string): Promise<void> {
    try {
      const held = await this.transactions.run((tx) => tx.getRepository(UploadReservationEntity).findOneBy({ id: uploadId }));
      if (held?.fileId) return;
      // The quota is given back even when the store cannot remove the bytes now: the sweep removes a temporary blob no upload owns.
      await this.storage.delete(tempKey).catch((error: unknown) => this.logger.warn({ err: error, tempKey }, 'Could not remove a temporary blob'));
      await this.transactions.run(async (tx) => {
        // Locked: a reservation of more bytes still committing (the upload failed while it waited) is counted, not lost.
        const reservation = await tx
          .getRepository(UploadReservationEntity)
          .findOne({ where: { id: uploadId }, ...this.transactions.dialect.lockForUpdate<UploadReservationEntity>() });
        if (!reservation || reservation.fileId) return;
        const removed = await tx.getRepository(UploadReservationEntity).delete({ id: uploadId });
        if (removed.affected && reservation.bytes > 0) {
          await tx
            .createQueryBuilder()
            .update(AccountEntity)
            .set({ storageReserved: () => `storage_reserved - ${reservation.bytes}` })
            .where('id = :id', { id: reservation.accountId })
            .execute();
        }
      });
    } catch (error) {
      // The sweeper gives back what this could not; the caller's own error matters more.
      this.logger.error({ err: error, uploadId }, 'Could not release an upload reservation');
    }
  }
}
