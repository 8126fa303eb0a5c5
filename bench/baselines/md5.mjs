// Baseline (c): the hashing ceiling. MD5 over the same file in one process, nothing else; the file
// is read in 1 MiB chunks (from the page cache) and fed to one sequential hash.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

const path = process.argv[2];
const started = performance.now();
const hash = createHash('md5');
let bytes = 0;
for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) {
  hash.update(chunk);
  bytes += chunk.length;
}
const digest = hash.digest('hex');
process.stdout.write(JSON.stringify({ bytes, ms: performance.now() - started, md5: digest }) + '\n');
