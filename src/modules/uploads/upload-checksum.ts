import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError, InvalidRequest } from '../../common/errors/api-error.js';
import { makeProcessTempDir, removeOrphanedProcessTempDirs } from '../../infra/instances/process-temp-dirs.js';

/** The algorithms of the tus checksum extension we accept (Tus-Checksum-Algorithm). */
export const CHECKSUM_ALGORITHMS = ['md5', 'sha1'] as const;
type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

/** A chunk's dir is named after its process, so that those of a process that died mid-PATCH can be told apart. */
const CHUNK_DIR_PREFIX = 'fss-tus-chunk';

/** tus's 460 Checksum Mismatch. */
export const CHECKSUM_MISMATCH = 460;
// Node has no reason phrase for 460 and would send "HTTP/1.1 460 "; named once here, for every answer that uses it.
STATUS_CODES[CHECKSUM_MISMATCH] ??= 'Checksum Mismatch';

export interface UploadChecksum {
  algorithm: ChecksumAlgorithm;
  /** The digest the client announced (raw bytes). */
  expected: Buffer;
}

/** Reads `Upload-Checksum: <algorithm> <base64 digest>`; undefined when absent, 400 when not one we take. */
export function parseUploadChecksum(header: string | string[] | undefined): UploadChecksum | undefined {
  if (header === undefined) return undefined;
  const problem = (message: string) => InvalidRequest.fields([{ field: 'Upload-Checksum', message }]);
  const [algorithm, digest, ...rest] = String(header).trim().split(' ');
  if (rest.length > 0 || !digest) throw problem('must be "<algorithm> <base64 digest>"');
  if (!(CHECKSUM_ALGORITHMS as readonly string[]).includes(algorithm)) throw problem(`algorithm must be one of ${CHECKSUM_ALGORITHMS.join(', ')}`);
  const expected = Buffer.from(digest, 'base64');
  if (expected.length !== createHash(algorithm).digest().length || expected.toString('base64') !== digest) throw problem(`is not a base64 ${algorithm} digest`);
  return { algorithm: algorithm as ChecksumAlgorithm, expected };
}

export class ChecksumMismatch extends ApiError {
  constructor(algorithm: string) {
    super(CHECKSUM_MISMATCH, 'invalid_request', `The chunk's ${algorithm} does not match Upload-Checksum; nothing of it was stored. Send it again.`, {
      fields: [{ field: 'Upload-Checksum', message: 'does not match the bytes received' }],
    });
  }
}

/**
 * A chunk sent with Upload-Checksum is stored all or nothing: its bytes are first written to a
 * temporary file (on disk, never in memory) while their digest is computed, and only a chunk whose
 * digest matches goes on to the upload. Answers the verified bytes; `discard()` removes the file.
 */
export async function verifiedChunk(source: Readable, checksum: UploadChecksum): Promise<{ bytes: Readable; discard: () => Promise<void> }> {
  const dir = await makeProcessTempDir(CHUNK_DIR_PREFIX);
  const discard = () => rm(dir, { recursive: true, force: true });
  try {
    const digest = createHash(checksum.algorithm);
    const hashing = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        digest.update(chunk);
        callback(null, chunk);
      },
    });
    const path = join(dir, 'chunk');
    await pipeline(source, hashing, createWriteStream(path));
    if (!digest.digest().equals(checksum.expected)) throw new ChecksumMismatch(checksum.algorithm);
    return { bytes: createReadStream(path), discard };
  } catch (error) {
    await discard();
    throw error;
  }
}

/** Removes the chunk dirs of processes that are no longer running (a SIGKILL or the OOM killer leaves them); returns how many. */
export function removeOrphanedChunkDirs(): Promise<number> {
  return removeOrphanedProcessTempDirs(CHUNK_DIR_PREFIX);
}
