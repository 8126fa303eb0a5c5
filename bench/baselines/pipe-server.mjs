// Baseline (a): the practical ceiling for an upload that hashes. A bare node:http server that pipes
// the request body into a file while computing its MD5 on the event loop, then answers the hash.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const dir = process.argv[2];
let n = 0;
const server = createServer(async (req, res) => {
  const hash = createHash('md5');
  const path = join(dir, `upload-${process.pid}-${n++}`);
  const hashing = new Transform({
    transform(chunk, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(req, hashing, createWriteStream(path));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ md5: hash.digest('hex'), path }));
  } catch (error) {
    res.writeHead(500).end(String(error));
  }
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`LISTENING ${server.address().port}\n`));
