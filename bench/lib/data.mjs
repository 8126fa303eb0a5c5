import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { MiB } from './measure.mjs';

/**
 * Writes `size` bytes of incompressible data (a 16 MiB random block repeated) and answers its MD5.
 * Random content keeps type detection on the generic path and any compression out of the picture.
 */
export async function writeRandomFile(path, size) {
  const block = randomBytes(Math.min(size, 16 * MiB));
  const hash = createHash('md5');
  const out = createWriteStream(path);
  let written = 0;
  while (written < size) {
    const piece = block.subarray(0, Math.min(block.length, size - written));
    hash.update(piece);
    if (!out.write(piece)) await once(out, 'drain');
    written += piece.length;
  }
  out.end();
  await once(out, 'finish');
  return hash.digest('hex');
}
