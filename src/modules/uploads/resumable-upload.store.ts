import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { FileStore } from '@tus/file-store';
import { ERRORS, type KvStore, Upload } from '@tus/utils';
import { Clock } from '../../common/clock.js';
import { Transactions } from '../../infra/database/transactions.js';
import { blobKeys } from '../../infra/storage/blob-storage.js';
import { SNIFF_BYTES } from '../files/file-type-detection.js';
import type { ReceivedUpload } from '../files/upload/upload-receiver.js';
import { UploadReceiver } from '../files/upload/upload-receiver.js';
import { UploadReservationEntity } from '../files/upload/upload-reservation.entity.js';
import { changeStorageUsage } from '../files/storage-usage.js';
import { ResumableUploadEntity } from './resumable-upload.entity.js';

/** The MD5 of an upload's first `offset` bytes, kept between the PATCH requests one process receives. */
interface RunningDigest {
  hash: Hash;
  offset: number;
}

/**
 * @tus/file-store writing each upload straight into its temporary blob (`tmp/<upload id>` under
 * STORAGE_DIR, the key the multipart upload uses too), with our database as its config store, so
 * the offset is simply the blob's size and any process sharing the storage can resume.
 *
 * It hashes as the bytes arrive: a process keeps the running MD5 of each upload it receives, so
 * consecutive PATCHes to one process cost no extra read. When a PATCH finds no running hash at its
 * offset (the upload moved to another process, or the process restarted) it first re-reads the
 * bytes already received, once; MD5 state cannot be stored, so that read is the price of moving.
 */
export class ResumableUploadStore extends FileStore {
  private readonly digests = new Map<string, RunningDigest>();

  constructor(
    storageDir: string,
    expiryMs: number,
    private readonly rows: ResumableUploadRows,
    private readonly transactions: Transactions,
    private readonly receiver: UploadReceiver,
    private readonly clock: Clock,
  ) {
    super({ directory: join(storageDir, dirname(blobKeys.temp('x'))), configstore: rows, expirationPeriodInMilliseconds: expiryMs });
  }

  override async create(upload: Upload): Promise<Upload> {
    try {
      return await super.create(upload);
    } catch (error) {
      await this.forget(upload.id);
      throw error;
    }
  }

  override async getUpload(id: string): Promise<Upload> {
    const row = await this.rows.find(id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    // A completed upload's bytes became a file: it stays complete, so a retried last PATCH or HEAD learns it is done.
    if (row.fileId) return new Upload({ ...this.rows.toUpload(row), offset: row.length ?? 0 });
    return super.getUpload(id);
  }

  override async write(readable: Readable, id: string, offset: number): Promise<number> {
    const row = await this.rows.find(id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    if (row.fileId) {
      readable.resume();
      return offset;
    }
    await this.rows.touch(id);
    const digest = await this.digestAt(id, offset);
    const hashing = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        digest.hash.update(chunk);
        digest.offset += chunk.length;
        callback(null, chunk);
      },
    });
    readable.on('error', (error) => hashing.destroy(error));
    try {
      return await super.write(readable.pipe(hashing), id, offset);
    } finally {
      // A write cut short may have hashed bytes it did not store: then the next PATCH re-reads.
      const stored = await stat(this.pathOf(id)).then((s) => s.size, () => -1);
      if (digest.offset !== stored) this.digests.delete(id);
      await this.rows.touch(id);
    }
  }

  /** Termination: the bytes go and the quota comes back. A completed upload's file stays; only the upload is forgotten. */
  override async remove(id: string): Promise<void> {
    const row = await this.rows.find(id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    await this.forget(id, row);
  }

  /**
   * A deferred upload reserved the plan's maximum size; once its length is known it keeps only
   * that much, and gives the rest back.
   */
  override async declareUploadLength(id: string, length: number): Promise<void> {
    const now = this.clock.now();
    await this.transactions.run(async (tx) => {
      const reservation = await tx.getRepository(UploadReservationEntity).findOneBy({ id });
      if (!reservation || reservation.fileId) throw ERRORS.FILE_NOT_FOUND;
      const excess = reservation.bytes - length;
      if (excess > 0) {
        await tx.getRepository(UploadReservationEntity).update({ id }, { bytes: length, updatedAt: now });
        await changeStorageUsage(tx, reservation.accountId, { used: 0, reserved: -excess }, now);
      }
      await tx.getRepository(ResumableUploadEntity).update({ id }, { length });
    });
  }

  /** Every byte of a finished upload, as the multipart upload's commit takes them. */
  async received(row: ResumableUploadEntity, reserved: number): Promise<ReceivedUpload> {
    const size = row.length ?? -1;
    const stored = await stat(this.pathOf(row.id)).then((s) => s.size, () => -1);
    if (stored !== size) throw ERRORS.FILE_NO_LONGER_EXISTS;
    const md5 = (await this.digestAt(row.id, size)).hash.digest('hex');
    this.digests.delete(row.id);
    const head = Buffer.alloc(Math.min(SNIFF_BYTES, size));
    const file = await open(this.pathOf(row.id), 'r');
    try {
      await file.read(head, 0, head.length, 0);
    } finally {
      await file.close();
    }
    // A resumable upload reserves its whole length at creation, never counting on the bytes an overwrite replaces.
    return { uploadId: row.id, tempKey: blobKeys.temp(row.id), size, md5, head, reserved, reservedAgainstReplaced: false };
  }

  /** Gives back what an unfinished upload holds (bytes, quota) and drops its row; for termination and expiry. */
  async forget(id: string, row?: ResumableUploadEntity | null): Promise<void> {
    this.digests.delete(id);
    if (!(row ?? (await this.rows.find(id)))?.fileId) await this.receiver.release(id, blobKeys.temp(id));
    await this.rows.delete(id);
  }

  /** Where an upload's bytes are: its temporary blob (only ids of our rows get here). */
  private pathOf(id: string): string {
    return join(this.directory, id);
  }

  /** The running MD5 at `offset`, re-reading the stored bytes when this process does not have it. */
  private async digestAt(id: string, offset: number): Promise<RunningDigest> {
    const running = this.digests.get(id);
    if (running && running.offset === offset) return running;
    const digest: RunningDigest = { hash: createHash('md5'), offset: 0 };
    if (offset > 0) {
      for await (const chunk of createReadStream(this.pathOf(id), { start: 0, end: offset - 1 })) {
        digest.hash.update(chunk as Buffer);
        digest.offset += (chunk as Buffer).length;
      }
      if (digest.offset !== offset) throw ERRORS.FILE_NO_LONGER_EXISTS;
    }
    this.digests.set(id, digest);
    return digest;
  }
}

/**
 * The resumable_uploads table as @tus/file-store's config store. Rows are written by
 * CreateResumableUploadHandler (and the length by declareUploadLength), so `set` has nothing to add.
 */
export class ResumableUploadRows implements KvStore<Upload> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly expiryMs: number,
  ) {}

  find(id: string): Promise<ResumableUploadEntity | null> {
    return this.transactions.run((tx) => tx.getRepository(ResumableUploadEntity).findOneBy({ id }));
  }

  async get(id: string): Promise<Upload | undefined> {
    const row = await this.find(id);
    return row ? new Upload(this.toUpload(row)) : undefined;
  }

  async set(): Promise<void> {}

  async delete(id: string): Promise<void> {
    await this.transactions.run((tx) => tx.getRepository(ResumableUploadEntity).delete({ id }));
  }

  /** The upload is active: its idle expiry starts again. */
  async touch(id: string): Promise<void> {
    const expiresAt = new Date(this.clock.now().getTime() + this.expiryMs);
    await this.transactions.run((tx) => tx.getRepository(ResumableUploadEntity).update({ id }, { expiresAt }));
  }

  /**
   * @tus/server dates expiry from `creation_date`; ours runs from the last activity, so the
   * creation date it sees is that activity's (Upload-Expires then names the true expiry).
   */
  toUpload(row: ResumableUploadEntity): ConstructorParameters<typeof Upload>[0] {
    return {
      id: row.id,
      size: row.length ?? undefined,
      offset: 0,
      metadata: JSON.parse(row.metadata) as Record<string, string | null>,
      creation_date: new Date(row.expiresAt.getTime() - this.expiryMs).toISOString(),
    };
  }
}
