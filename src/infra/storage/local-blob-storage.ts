import { constants as fsConstants, close as closeFd, createReadStream, createWriteStream, fstat as fstatFd, open as openFd, read as readFd } from 'node:fs';
import { access, mkdir, opendir, rename, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { Logger } from '@nestjs/common';
import { promisify } from 'node:util';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertSafeKey, blobKeys, BlobStorage, BlobStoreUnavailable, type ByteRange } from './blob-storage.js';

const openFile = promisify(openFd);
const readAt = promisify(readFd);
const statFd = promisify(fstatFd);

/**
 * Bytes per read when streaming a blob out: four times the stream default, so a large download costs a
 * quarter of the reads and socket writes, while what one download holds in memory stays small.
 */
const READ_CHUNK_BYTES = 256 * 1024;

/** Blobs as files under one directory (STORAGE_DIR). */
export class LocalBlobStorage extends BlobStorage {
  private readonly logger = new Logger('LocalBlobStorage');
  private readonly root: string;

  constructor(root: string) {
    super();
    this.root = resolve(root);
  }

  private path(key: string): string {
    assertSafeKey(key);
    const path = resolve(this.root, key);
    if (!path.startsWith(this.root + sep)) throw new Error(`Blob key escapes the storage root: ${key}`);
    return path;
  }

  async write(key: string, source: Readable): Promise<void> {
    const path = this.path(key);
    // The directory (tmp/ for uploads) nearly always exists: made only when the open says it is missing,
    // so an upload costs no mkdir call.
    const open = () => openFile(path, 'wx');
    try {
      const fd = await open().catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
        await mkdir(dirname(path), { recursive: true });
        return open();
      });
      await pipeline(source, createWriteStream('', { fd, autoClose: true }));
    } catch (error) {
      // Also when the open failed (a blob already there: a re-run thumbnail job): nothing is left at the key.
      // Without the error: a source nobody listens to for 'error' must not crash the process.
      source.destroy();
      await rm(path, { force: true });
      // A source that failed (a client gone, an upload refused) is passed on as it is: only file system errors are the disk's.
      throw this.failure(error);
    }
  }

  /**
   * One writeFile (open, write, close), without a stream: for the few KiB of a small upload, a write stream
   * and its pipeline cost more CPU than the bytes. Through the thread pool, like every file call here, so a
   * slow disk never stalls the event loop.
   */
  override async writeBytes(key: string, bytes: Buffer): Promise<void> {
    const path = this.path(key);
    const create = () => writeFile(path, bytes, { flag: 'wx' });
    try {
      await create().catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
        await mkdir(dirname(path), { recursive: true });
        await create();
      });
    } catch (error) {
      // As write(): nothing is left at the key, also when the open failed (a blob already there).
      await rm(path, { force: true });
      throw this.failure(error);
    }
  }

  async move(fromKey: string, toKey: string): Promise<void> {
    const to = this.path(toKey);
    const from = this.path(fromKey);
    try {
      // As write(): the target's directory is made only when the rename says it is missing, so a move is one call.
      await rename(from, to).catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
        await mkdir(dirname(to), { recursive: true });
        await rename(from, to);
      });
    } catch (error) {
      throw this.failure(error);
    }
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    // Opened here, not lazily by the stream, so a missing blob rejects this call instead of
    // surfacing later as an 'error' event that nobody may be listening to yet.
    // A plain descriptor, not a FileHandle: its stream reads with callbacks, without a promise per chunk.
    const fd = await openFile(this.path(key), 'r').catch((error: unknown) => {
      throw this.failure(error);
    });
    if (range) {
      const refuse = (error: Error): never => {
        closeFd(fd, () => undefined);
        throw error;
      };
      const { size } = await statFd(fd).catch(refuse);
      if (size <= range.end) refuse(new Error(`Blob ${key} ends before byte ${range.end}`));
    }
    return createReadStream('', { fd, autoClose: true, highWaterMark: READ_CHUNK_BYTES, ...(range ? { start: range.start, end: range.end } : {}) });
  }

  /** One open and one read; the close is not waited for, so the bytes go out one thread-pool round trip sooner. */
  override async readBytes(key: string, range: ByteRange): Promise<Buffer> {
    const fd = await openFile(this.path(key), 'r').catch((error: unknown) => {
      throw this.failure(error);
    });
    try {
      const buffer = Buffer.allocUnsafe(range.end - range.start + 1);
      const { bytesRead } = await readAt(fd, buffer, 0, buffer.length, range.start);
      // Blobs never change once written: fewer bytes than the row says means the file was damaged outside the service.
      if (bytesRead !== buffer.length) throw new Error(`Blob ${key} ends before byte ${range.end}`);
      return buffer;
    } finally {
      // Closing a descriptor opened for reading cannot lose data; an error here has nothing left to undo.
      closeFd(fd, () => undefined);
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.path(key);
    await unlink(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw this.failure(error);
    });
    // Fails, harmlessly, while the directory still holds another of the file's blobs.
    if (blobKeys.inDirectoryOfItsOwn(key)) await rmdir(dirname(path)).catch(() => undefined);
  }

  override async stat(key: string): Promise<{ size: number } | null> {
    return stat(this.path(key)).then(
      (s) => ({ size: s.size }),
      () => null,
    );
  }

  async exists(key: string): Promise<boolean> {
    return stat(this.path(key)).then(
      () => true,
      () => false,
    );
  }

  async check(): Promise<void> {
    // Made if missing, as the first upload would; fails when the path is a file, or the disk is read-only.
    await mkdir(this.root, { recursive: true });
    await access(this.root, fsConstants.W_OK);
  }

  async *list(prefix: string): AsyncIterable<{ key: string; lastModified: Date }> {
    // A prefix may end inside a name (blobKeys.filePrefix): walk its directory, keep the keys that start with it.
    const directory = prefix.slice(0, prefix.lastIndexOf('/') + 1);
    for await (const blob of this.walk(join(this.root, directory))) if (blob.key.startsWith(prefix)) yield blob;
  }

  /**
   * A failed file system call as the caller should see it: a blob missing, or already there, as it is; anything else
   * (a full, read-only or failing disk, no descriptors left) the store being unavailable.
   */
  private failure(error: unknown): unknown {
    // Only a system call's error is the disk's: a source's failure (a database refusal met while reserving quota) carries a code too.
    const { code, syscall } = (error ?? {}) as NodeJS.ErrnoException;
    if (typeof syscall !== 'string' || code === 'ENOENT' || code === 'EEXIST') return error;
    this.logger.warn({ err: error }, 'The storage directory failed a request');
    return new BlobStoreUnavailable(error);
  }

  private async *walk(dir: string): AsyncIterable<{ key: string; lastModified: Date }> {
    let handle;
    try {
      handle = await opendir(dir);
    } catch {
      return;
    }
    for await (const entry of handle) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) yield* this.walk(full);
      else if (entry.isFile()) yield { key: relative(this.root, full).split(sep).join('/'), lastModified: (await stat(full)).mtime };
    }
  }
}
